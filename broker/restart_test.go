package broker_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/engine"
)

// TestRestartKeepsData restarts a broker on every durable engine between two
// rounds of idempotent produce: topics, records and offsets survive, and the
// client's producer carries on without duplicates.
func TestRestartKeepsData(t *testing.T) {
	for _, name := range engine.Names() {
		d, err := engine.Lookup(name)
		require.NoError(t, err)
		t.Run(name, func(t *testing.T) {
			if !d.Caps.Durable {
				t.Skipf("engine %s is not durable: a restart starts it empty", name)
			}
			b := brokertest.Start(t, brokertest.Engine(name))
			b.CreateTopic(t, "keep", 3)
			cl := b.Client(t, kgo.DefaultProduceTopic("keep"))
			produceN(t, cl, "keep", "first", 150)

			b.Restart(t)
			info, ok := b.Metadata().Topic("keep")
			require.True(t, ok, "topic restored")
			assert.Len(t, info.Partitions, 3)

			produceN(t, cl, "keep", "second", 150)
			got := consumeN(t, b, "keep", 300)
			require.Len(t, got, 300, "every record once")
			seen := map[string]int{}
			for _, r := range got {
				seen[string(r.Value)]++
			}
			for i := range 150 {
				for _, p := range []string{"first", "second"} {
					assert.Equal(t, 1, seen[fmt.Sprintf("%s-%d", p, i)], "%s-%d", p, i)
				}
			}
		})
	}
}
