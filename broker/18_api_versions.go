package broker

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions: v0-3
//
// Behaviour:
//   - Advertises exactly the API keys and version ranges registered by the
//     files of this package (register in init) for the listener the
//     connection came in on (client or controller), nothing else.
//   - A version above 3 (clients open with their newest, v4 or v5) gets a v0
//     response with UNSUPPORTED_VERSION and the ranges we serve, ApiVersions'
//     among them, as KIP-511 asks: the client retries with a version we
//     serve. The request body is not decoded in that case.
//   - v3: the client software name and version must match Kafka's pattern,
//     else INVALID_REQUEST (as a real broker).
//   - The response header is always v0 (no tagged fields), whatever the
//     request version, so any client can parse it.
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: flexible; ClientSoftwareName/Version; no features advertised.

const apiVersionsKey = 18

func init() {
	register(apiVersionsKey, 0, 3, handleApiVersions)
	registerController(apiVersionsKey, 0, 3, handleApiVersions)
}

var softwareRE = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleApiVersions(r *request) reply {
	resp := kmsg.NewPtrApiVersionsResponse()
	if r.body == nil {
		// Above our range: the v0 fallback, with every range we serve
		// (a client needs only ours, ApiVersions', to retry).
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ApiKeys = advertised(r.c.listener)
		return done(resp)
	}
	req := r.body.(*kmsg.ApiVersionsRequest)
	resp.SetVersion(req.Version)
	if req.Version >= 3 && (!softwareRE.MatchString(req.ClientSoftwareName) || !softwareRE.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return done(resp)
	}
	resp.ApiKeys = advertised(r.c.listener)
	return done(resp)
}

// advertised lists every API registered on listener l and its version
// range, by key.
func advertised(l listener) []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	for _, a := range registered(l) {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		out = append(out, k)
	}
	return out
}
