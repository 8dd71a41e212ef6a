package broker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/minikafka/minikafka/engine"
)

// syncMetrics is the engine.Observer the broker gives every partition's
// engine: each sync round an engine reports (see engine.Observer) lands in
// these metrics, whichever engine it is and whatever filesystem it uses.
// Observing a histogram or a counter does not block, as the contract asks.
type syncMetrics struct {
	duration prometheus.Observer // every round, failed ones too
	batch    prometheus.Observer // appends per successful round
	rounds   prometheus.Counter
	errors   prometheus.Counter
	bytes    prometheus.Counter
}

var _ engine.Observer = (*syncMetrics)(nil)

// newSyncMetrics makes the metrics, labelled with the engine's name, and
// returns them with their collectors for registration.
func newSyncMetrics(eng prometheus.Labels) (*syncMetrics, []prometheus.Collector) {
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "minikafka_sync_duration_seconds",
		Help:    "Time each sync round of the engine's group commit took: its fsyncs (segment's active segment, pebble's WAL; badger's synced commit, two fsyncs) and the writes just before them.",
		Buckets: latencyBuckets, ConstLabels: eng,
	})
	batch := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "minikafka_group_commit_batch_size",
		Help:    "Appended batches each successful sync round made durable: the group-commit size, as the engine reports it.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12), ConstLabels: eng,
	})
	rounds := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikafka_sync_rounds_total", Help: "Sync rounds (fsyncs or synced commits that made appends durable) the engines made, failed ones included.",
		ConstLabels: eng,
	})
	errs := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikafka_sync_errors_total", Help: "Sync rounds that failed; the partition refuses writes from then on.",
		ConstLabels: eng,
	})
	bytes := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikafka_synced_bytes_total", Help: "Batch bytes the sync rounds made durable (what producers sent, not what the engine wrote for it).",
		ConstLabels: eng,
	})
	m := &syncMetrics{duration: duration, batch: batch, rounds: rounds, errors: errs, bytes: bytes}
	return m, []prometheus.Collector{duration, batch, rounds, errs, bytes}
}

// Synced implements engine.Observer.
func (m *syncMetrics) Synced(ev engine.SyncEvent) {
	m.rounds.Inc()
	m.duration.Observe(ev.Duration.Seconds())
	if ev.Err != nil {
		m.errors.Inc()
		return
	}
	m.batch.Observe(float64(ev.Batches))
	m.bytes.Add(float64(ev.Bytes))
}

// teeObserver tells the caller's Observer, then the broker's, about every
// event.
type teeObserver struct{ caller, broker engine.Observer }

func (o teeObserver) Synced(ev engine.SyncEvent) {
	o.caller.Synced(ev)
	o.broker.Synced(ev)
}

// observeEngine returns the engine options with the broker's sync metrics as
// their Observer, after the caller's own if Config.EngineOptions had one.
func (s *Server) observeEngine(opts engine.Options) engine.Options {
	if opts.Observer == nil {
		opts.Observer = s.metrics.syncs
	} else {
		opts.Observer = teeObserver{caller: opts.Observer, broker: s.metrics.syncs}
	}
	return opts
}
