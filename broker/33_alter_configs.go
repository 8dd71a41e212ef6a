package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// AlterConfigs: v0-2
//
// Behaviour:
//   - Forwarded to the active controller, which decides every resource on
//     one image (cluster.Settings.AlterConfigs) and commits the valid ones
//     as one batch of config records: the configs a resource lists become
//     its whole set of dynamic configs; those it does not list go back to
//     their defaults.
//   - Topics: the configs of DescribeConfigs; an unknown key or a bad value
//     is INVALID_CONFIG with the reason, min.insync.replicas above the
//     replication factor too; unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
//   - Brokers: min.insync.replicas and unclean.leader.election.enable,
//     cluster-wide only (resource name ""); a static broker config is
//     INVALID_REQUEST "cannot update these configs dynamically", one
//     broker's resource INVALID_REQUEST. Other resource types:
//     INVALID_REQUEST.
//   - A null value, a key named twice or a resource named twice in one
//     request: INVALID_REQUEST.
//   - ValidateOnly: the checks, nothing committed.
//   - The answer comes once the change is committed and this broker's
//     partitions have it, so a DescribeConfigs that follows sees it here.
//     Every broker applies it from its metadata, without a restart. No
//     controller reachable: NOT_CONTROLLER.
//
// Version notes:
//   - v1: no change; v2: flexible.

func init() { register(33, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(r *request) reply {
	req := r.body.(*kmsg.AlterConfigsRequest)
	return r.s.forwardAdmin(req, 0, func(ctx context.Context, resp kmsg.Response) {
		var codes []int16
		for _, sr := range resp.(*kmsg.AlterConfigsResponse).Resources {
			codes = append(codes, sr.ErrorCode)
		}
		r.s.awaitConfigs(ctx, req, req.ValidateOnly, codes)
	})
}

// awaitConfigs waits until this broker's reconciled metadata shows done
// every alteration of req that the controller answered without an error.
// Another client's change of the same configs in between can keep that
// from ever holding: the wait then ends with the admin timeout, and the
// answer, which is the controller's, is the same.
func (s *Server) awaitConfigs(ctx context.Context, req kmsg.Request, validateOnly bool, codes []int16) {
	if validateOnly {
		return
	}
	alts := cluster.Alterations(req)
	_ = s.await(ctx, func() bool {
		img := s.store.Image()
		if s.reconciled.value() < int64(img.Offset()) {
			return false
		}
		set := s.ctl.Settings()
		for i, a := range alts {
			if i < len(codes) && codes[i] == 0 && !set.Settled(img, a) {
				return false
			}
		}
		return true
	})
}
