package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// IncrementalAlterConfigs: v0-1
//
// Behaviour:
//   - As AlterConfigs (33_alter_configs.go: forwarded to the controller,
//     the same resources, checks and errors, ValidateOnly, the answer once
//     this broker has the change), except that each config names its
//     operation on the resource's current configs: SET a value, DELETE it
//     (the default applies again), APPEND to or SUBTRACT from a list
//     (cleanup.policy; a config unset appends to its default, as Kafka
//     does). APPEND or SUBTRACT of a config that is not a list, or an
//     unknown operation: INVALID_REQUEST.
//
// Version notes:
//   - v1: flexible.

func init() { register(44, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(r *request) reply {
	req := r.body.(*kmsg.IncrementalAlterConfigsRequest)
	return r.s.forwardAdmin(req, 0, func(ctx context.Context, resp kmsg.Response) {
		var codes []int16
		for _, sr := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
			codes = append(codes, sr.ErrorCode)
		}
		r.s.awaitConfigs(ctx, req, req.ValidateOnly, codes)
	})
}
