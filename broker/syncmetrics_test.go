package broker_test

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// engineMetric reads one sample of a metric labelled with the engine from
// the broker's /metrics; it fails the test when the sample is missing.
func engineMetric(t *testing.T, b *brokertest.Broker, name, eng string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	b.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{engine="` + regexp.QuoteMeta(eng) + `"\} (\S+)$`)
	m := re.FindStringSubmatch(rec.Body.String())
	require.NotNil(t, m, "%s{engine=%q} in /metrics", name, eng)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// TestSyncMetricsEveryEngine: after acknowledged produces, /metrics shows
// the sync rounds the engine reported, for badger (which does its own I/O)
// as for the others, and the caller's own Observer hears the same rounds.
func TestSyncMetricsEveryEngine(t *testing.T) {
	for _, c := range []struct {
		engine  string
		durable bool
	}{{"badger", true}, {"segment", true}, {"pebble", true}, {"memory", false}} {
		t.Run(c.engine, func(t *testing.T) {
			var callerBatches atomic.Int64
			b := brokertest.Start(t, brokertest.Engine(c.engine), brokertest.Configure(func(cfg *broker.Config) {
				cfg.EngineOptions.Sync = engine.SyncAlways
				cfg.EngineOptions.Observer = engine.ObserverFunc(func(ev engine.SyncEvent) { callerBatches.Add(int64(ev.Batches)) })
			}))
			b.CreateTopic(t, "synced", 1)
			cl := b.Client(t, kgo.DefaultProduceTopic("synced"), kgo.RequiredAcks(kgo.AllISRAcks()))
			const produces = 5
			for i := range produces {
				// One record per request: each is its own batch.
				require.NoError(t, cl.ProduceSync(interoptest.Context(t), &kgo.Record{Value: fmt.Appendf(nil, "value %d", i)}).FirstErr())
			}

			metric := func(name string) float64 { return engineMetric(t, b, name, c.engine) }
			rounds := metric("minikafka_sync_rounds_total")
			batches := metric("minikafka_group_commit_batch_size_sum")
			assert.Zero(t, metric("minikafka_sync_errors_total"), "no sync failed")
			assert.Equal(t, rounds, metric("minikafka_sync_duration_seconds_count"), "every round's duration is observed")
			assert.Equal(t, rounds, metric("minikafka_group_commit_batch_size_count"), "every successful round's size is observed")
			assert.Equal(t, float64(callerBatches.Load()), batches, "the caller's Observer hears the same rounds as the metrics")
			if !c.durable {
				assert.Zero(t, rounds, "an engine that is not durable reports no sync round")
				return
			}
			// acks=all under sync=always is acknowledged after the round
			// that covers the batch, and rounds are reported before that.
			assert.GreaterOrEqual(t, batches, float64(produces), "every acknowledged batch was counted by a sync round")
			assert.GreaterOrEqual(t, rounds, 1.0, "sync rounds were counted")
			assert.LessOrEqual(t, rounds, batches, "a round covers at least one batch")
			assert.Greater(t, metric("minikafka_sync_duration_seconds_sum"), 0.0, "rounds took some time")
			assert.GreaterOrEqual(t, metric("minikafka_synced_bytes_total"), float64(produces*61), "a record batch is at least its 61-byte header")
		})
	}
}
