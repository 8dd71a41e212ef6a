package groupinterop

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/interop/interoptest"
)

// TestStaticMemberRestartKeepsPartitions: franz-go static members
// (group.instance.id). One closes (a static member sends no LeaveGroup) and
// its process comes back with the same instance id: it gets the same
// partitions and the other members see no rebalance at all. (kfake is no
// reference here: it sometimes rebalances when the member comes back.)
func TestStaticMemberRestartKeepsPartitions(t *testing.T) {
	for _, tg := range []interoptest.Target{interoptest.Broker("memory")} {
		t.Run(tg.Name, func(t *testing.T) {
			s := tg.Start(t, 1)
			createTopic(t, s.Addr, "t", partitions)
			var assigned atomic.Int64 // assignments seen by the members that stay
			var mu sync.Mutex
			owned := map[string]map[int32]bool{} // partitions each instance's client holds
			start := func(instance string, count bool) *kgo.Client {
				change := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
					return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
						mu.Lock()
						defer mu.Unlock()
						if owned[instance] == nil {
							owned[instance] = map[int32]bool{}
						}
						for _, p := range ps["t"] {
							if add {
								owned[instance][p] = true
							} else {
								delete(owned[instance], p)
							}
						}
						if add && count {
							assigned.Add(1)
						}
					}
				}
				opts := []kgo.Opt{
					kgo.SeedBrokers(s.Addr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
					// A session long enough that the restarting member is never
					// taken for dead, however slow the machine.
					kgo.InstanceID(instance), kgo.SessionTimeout(10 * time.Second),
					kgo.HeartbeatInterval(heartbeatInterval), kgo.FetchMaxWait(200 * time.Millisecond),
					kgo.OnPartitionsAssigned(change(true)),
					kgo.OnPartitionsRevoked(change(false)), kgo.OnPartitionsLost(change(false)),
				}
				cl, err := kgo.NewClient(opts...)
				require.NoError(t, err)
				go func() {
					for !cl.PollFetches(context.Background()).IsClientClosed() {
					}
				}()
				t.Cleanup(cl.Close)
				return cl
			}
			holds := func(instance string, want []int32) bool {
				mu.Lock()
				defer mu.Unlock()
				if len(owned[instance]) != len(want) {
					return false
				}
				for _, p := range want {
					if !owned[instance][p] {
						return false
					}
				}
				return true
			}
			start("a", true)
			b := start("b", false)
			start("c", true)
			before := byInstance(t, s.Addr)
			// The broker's view settles before the clients have run their
			// callbacks: count only once a and c hold what the group gave them.
			require.Eventually(t, func() bool {
				return holds("a", before["a"]) && holds("c", before["c"])
			}, 30*time.Second, 20*time.Millisecond)
			settled := assigned.Load()

			b.Close()
			start("b", false)
			var after map[string][]int32
			require.Eventually(t, func() bool {
				after = byInstance(t, s.Addr)
				return len(after["b"]) > 0
			}, 30*time.Second, 20*time.Millisecond)
			assert.Equal(t, before, after, "every instance keeps its partitions")
			assert.Equal(t, settled, assigned.Load(), "the members that stayed saw no rebalance")
		})
	}
}

// byInstance waits for the group to settle with three members owning
// every partition and returns the partitions by instance id.
func byInstance(t *testing.T, addr string) map[string][]int32 {
	t.Helper()
	a := waitAssigned(t, addr, "g", "t", 3, partitions)
	gs, err := admin(t, addr).DescribeGroups(interoptest.Context(t), "g")
	require.NoError(t, err)
	out := map[string][]int32{}
	for _, m := range gs["g"].Members {
		require.NotNil(t, m.InstanceID)
		out[*m.InstanceID] = a[m.MemberID]
	}
	return out
}
