package groupinterop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// TestChurn: 12 partitions, 3 members, a 4th joins with franz-go's
// cooperative-sticky balancer: exactly the 3 partitions the newcomer needs
// change owner (the bound is at most 3). `cmd/bench -profile groups` reports the
// same measurement in results/groups.md.
func TestChurn(t *testing.T) {
	s := interoptest.Broker("memory").Start(t, 1)
	b := &load.Groups{Client: load.Client{Brokers: []string{s.Addr}}, Topic: "churn", Partitions: 12, Poll: 10 * time.Millisecond}
	ctx := interoptest.Context(t)
	require.NoError(t, load.EnsureTopic(ctx, b.Client, b.Topic, int32(b.Partitions)))
	res, err := b.Churn(ctx, 3, kgo.CooperativeStickyBalancer())
	require.NoError(t, err)
	t.Logf("cooperative-sticky: %d partitions moved, settled again in %v: %v -> %v", res.Moved, res.Settle, res.Before, res.After)
	assert.LessOrEqual(t, res.Moved, 3)
	for m, ps := range res.After {
		assert.Len(t, ps, 3, "member %s", m)
	}
}

// TestSettle: ten members started at once end up in one Stable
// generation owning every partition. The time it takes is reported, not
// asserted (`cmd/bench -profile groups` measures it against the 1 s target).
func TestSettle(t *testing.T) {
	s := interoptest.Broker("memory").Start(t, 1)
	b := &load.Groups{Client: load.Client{Brokers: []string{s.Addr}}, Topic: "settle", Partitions: 12, Poll: 5 * time.Millisecond}
	ctx := interoptest.Context(t)
	require.NoError(t, load.EnsureTopic(ctx, b.Client, b.Topic, int32(b.Partitions)))
	d, err := b.Settle(ctx, 10)
	require.NoError(t, err)
	t.Logf("10 members settled %v after the last JoinGroup", d)
}
