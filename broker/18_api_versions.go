package broker

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions: v0-5
//
// Behaviour:
//   - Advertises exactly the API keys and version ranges registered by the
//     files of this package (register in init) for the listener the
//     connection came in on (client or controller), nothing else.
//   - A version above 5 gets a v0 response with UNSUPPORTED_VERSION and the
//     ranges we serve, ApiVersions' among them, as KIP-511 asks: the client
//     retries with a version we serve. The request body is not decoded in
//     that case. (A v0 answer carries no features, so the versions clients
//     open with are served in full: franz-go opens with v5, and kept the
//     fallback's ranges without features, which made it see the
//     transaction.version feature on some connections and not others.)
//   - v3: the client software name and version must match Kafka's pattern,
//     else INVALID_REQUEST (as a real broker).
//   - The response header is always v0 (no tagged fields), whatever the
//     request version, so any client can parse it.
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: flexible; ClientSoftwareName/Version; features (KIP-584): the
//     broker supports transaction.version 0-2 and advertises the level
//     Config.Cluster.TransactionVersion sets (2 by default: KIP-890's
//     second part, which clients then use: EndTxn v5 bumps the epoch,
//     Produce v12 and TxnOffsetCommit v5 add their partition to the
//     transaction themselves). In a v3 answer a feature's minimum is at
//     least 1, as Kafka sends it (KAFKA-17011: older clients refuse 0).
//   - v4: no change; v5: ClusterID and NodeID, which must be set together
//     (INVALID_REQUEST otherwise) and name this cluster and node, or the
//     answer is REBOOTSTRAP_REQUIRED (the client is talking to a broker
//     its metadata does not know).

const apiVersionsKey = 18

func init() {
	register(apiVersionsKey, 0, 5, handleApiVersions)
	registerController(apiVersionsKey, 0, 5, handleApiVersions)
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
	if req.Version >= 5 {
		switch {
		case (req.ClusterID == nil) != (req.NodeID < 0):
			resp.ErrorCode = kerr.InvalidRequest.Code
			return done(resp)
		case req.ClusterID != nil && (*req.ClusterID != r.s.cfg.ClusterID || req.NodeID != r.s.cfg.NodeID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return done(resp)
		}
	}
	resp.ApiKeys = advertised(r.c.listener)
	if req.Version >= 3 {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = transactionVersion, 0, 2
		if req.Version == 3 {
			sf.MinVersion = 1
		}
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		if level := r.s.cfg.Cluster.TransactionVersion; level > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = transactionVersion, level, level
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
			resp.FinalizedFeaturesEpoch = 1
		}
	}
	return done(resp)
}

// transactionVersion is Kafka's feature that says which transaction
// protocol the cluster runs (KIP-1022): 2 is KIP-890's second part.
const transactionVersion = "transaction.version"

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
