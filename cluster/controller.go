package cluster

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrNotController: this node is not the active controller. Callers send
// the request to another controller (kerr.NotController on the wire).
var ErrNotController = fmt.Errorf("cluster: not the active controller: %w", kerr.NotController)

// Defaults of the controller's timing (CoreConfig, and the shells that
// drive a ControllerCore).
const (
	// DefaultSessionTimeout fences a broker that has not heartbeat for
	// that long (Kafka's broker.session.timeout.ms).
	DefaultSessionTimeout = 3 * time.Second
	// DefaultFailoverGrace covers a few heartbeats (every 250 ms by
	// default): a broker that is alive finds the new controller at once
	// (it is a voter and sees the raft leader change).
	DefaultFailoverGrace = 750 * time.Millisecond
	// DefaultTickInterval is how often the active controller checks
	// sessions; DefaultRebalanceInterval how often leaderships go back to
	// preferred replicas.
	DefaultTickInterval      = 100 * time.Millisecond
	DefaultRebalanceInterval = 2 * time.Second
)

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// NotActiveResponse is the answer of a controller that is not the active
// one to req (NOT_CONTROLLER, as the operation would answer it), for a
// shell that must answer without reaching any controller.
func NotActiveResponse(req kmsg.Request, img *Metadata, now time.Time) (kmsg.Response, error) {
	c := NewControllerCore(CoreConfig{Seed: 1})
	op, err := c.Handle(Quorum{}, img, now, req)
	if err != nil {
		return nil, err
	}
	if !op.Done() {
		panic("cluster: an operation of an inactive controller proposes")
	}
	return op.Response(), nil
}
