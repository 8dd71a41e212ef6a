package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster: v0-2
//
// Behaviour:
//   - The cluster id, the active controller (as Metadata names it) and the
//     brokers from this broker's metadata image: the unfenced ones, and
//     with IncludeFencedBrokers (v2) the fenced ones too, flagged.
//   - EndpointType (v1+) 1 (brokers) only: 2 (controllers) gets
//     UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers (controllers
//     are reached through the brokers here).
//   - Authorized operations are not computed: INT32_MIN.
//   - Held, as Metadata is, until this broker is registered and unfenced.
//
// Version notes:
//   - v1: EndpointType; v2: IncludeFencedBrokers, IsFenced.

func init() { register(60, 0, 2, whenReady(handleDescribeCluster)) }

func handleDescribeCluster(r *request) reply {
	req := r.body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterAuthorizedOperations = noAuthorizedOps
	resp.EndpointType = 1
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return done(resp)
	}
	img := r.s.store.Image()
	var md kmsg.MetadataResponse
	r.s.describeBrokers(img, &md)
	resp.ClusterID, resp.ControllerID = *md.ClusterID, md.ControllerID
	for _, b := range img.Brokers() {
		if b.Fenced && !req.IncludeFencedBrokers {
			continue
		}
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.IsFenced = b.ID, b.Host, b.Port, b.Fenced
		if b.Rack != "" {
			rack := b.Rack
			db.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, db)
	}
	return done(resp)
}
