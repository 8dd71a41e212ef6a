package reassign

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Change is what the metadata said of one partition when it differed
// from the last look: the move's timeline, to read a gap against.
type Change struct {
	// At is seconds since the reassignment request.
	At        float64 `json:"at_s"`
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Epoch     int32   `json:"leader_epoch"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
}

func (c Change) String() string {
	return fmt.Sprintf("+%.2f s: leader %d (epoch %d), replicas %v, ISR %v", c.At, c.Leader, c.Epoch, c.Replicas, c.ISR)
}

// same reports whether c and o say the same of their partition.
func (c Change) same(o Change) bool {
	return c.Leader == o.Leader && c.Epoch == o.Epoch && slices.Equal(c.Replicas, o.Replicas) && slices.Equal(c.ISR, o.ISR)
}

// watch polls the topic's metadata every poll from start until stop is
// called, and keeps each partition's changes.
type watch struct {
	stop func() []Change
}

func startWatch(ctx context.Context, adm *kadm.Client, start time.Time, poll time.Duration) *watch {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu      sync.Mutex
		changes []Change
		done    = make(chan struct{})
	)
	last := map[int32]Change{}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if m, err := adm.Metadata(ctx, Topic); err == nil {
				at := time.Since(start).Seconds()
				for _, pd := range m.Topics[Topic].Partitions.Sorted() {
					c := Change{At: at, Partition: pd.Partition, Leader: pd.Leader, Epoch: pd.LeaderEpoch,
						Replicas: slices.Clone(pd.Replicas), ISR: slices.Clone(pd.ISR)}
					if prev, ok := last[pd.Partition]; ok && prev.same(c) {
						continue
					}
					last[pd.Partition] = c
					mu.Lock()
					changes = append(changes, c)
					mu.Unlock()
				}
			}
			_ = pause(ctx, poll)
		}
	}()
	return &watch{stop: func() []Change {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return changes
	}}
}

// around says what partition p's timeline did from a second before to a
// second after [from, to] (seconds since the request).
func around(changes []Change, p int32, from, to float64) string {
	var out []string
	for _, c := range changes {
		if c.Partition == p && c.At >= from-1 && c.At <= to+1 {
			out = append(out, c.String())
		}
	}
	if len(out) == 0 {
		return "no change"
	}
	return strings.Join(out, "; ")
}
