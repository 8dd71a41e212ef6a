package broker

import (
	"io/fs"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, all named minikafka_*.
type metrics struct {
	gatherer      prometheus.Gatherer // nil when the caller brought a Registerer
	requests      *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	conns         prometheus.Gauge
	connsRejected prometheus.Counter
	badRequests   prometheus.Counter
	durableWait   prometheus.Observer
	syncs         *syncMetrics // the engines' Observer
	replication   *replicationMetrics
}

// latencyBuckets span 50µs to about 13s.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 19)

func newMetrics(s *Server) *metrics {
	reg := s.cfg.Registerer
	m := &metrics{}
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg, m.gatherer = r, r
	}
	eng := prometheus.Labels{"engine": s.cfg.Engine}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "minikafka_requests_total", Help: "Requests answered, by API.",
	}, []string{"api"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "minikafka_request_duration_seconds", Help: "Time from a request fully read to its response written, by API.",
		Buckets: latencyBuckets,
	}, []string{"api"})
	m.conns = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "minikafka_open_connections", Help: "Client connections open now.",
	})
	m.connsRejected = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikafka_connections_rejected_total", Help: "Connections closed at accept because MaxConns were open.",
	})
	m.badRequests = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikafka_bad_requests_total", Help: "Requests that could not be decoded or served (the connection was closed).",
	})
	durable := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "minikafka_produce_durable_wait_seconds", Help: "Time a produced batch waits, once ordered, for durability (acks=1) or the high watermark (acks=all).",
		Buckets: latencyBuckets, ConstLabels: eng,
	})
	m.durableWait = durable
	syncs, syncCollectors := newSyncMetrics(eng)
	m.syncs = syncs
	disk := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "minikafka_disk_bytes", Help: "Bytes in the data directory's files.", ConstLabels: eng,
	}, func() float64 { return float64(dirBytes(s.cfg.Dir)) })
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "minikafka_inflight_request_bytes", Help: "Request bytes held in memory across connections.",
	}, func() float64 { return float64(s.budget.inUse()) })
	respInflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "minikafka_inflight_response_bytes", Help: "Fetched record bytes held in memory across connections.",
	}, func() float64 { return float64(s.respBudget.inUse()) })
	m.replication = newReplicationMetrics(s)
	collected := []prometheus.Collector{m.requests, m.latency, m.conns, m.connsRejected, m.badRequests, durable, disk, inflight, respInflight, m.replication}
	for _, c := range append(collected, syncCollectors...) {
		if err := reg.Register(c); err != nil {
			// A caller's registry that already holds our metrics (two
			// servers on one registry): keep counting, unexported.
			s.log.Warn("metric not registered", "err", err)
		}
	}
	return m
}

func (m *metrics) observe(api string, d time.Duration) {
	m.requests.WithLabelValues(api).Inc()
	m.latency.WithLabelValues(api).Observe(d.Seconds())
}

// MetricsHandler serves the server's metrics in the Prometheus text format,
// or nil when Config.Registerer was set (the caller serves its registry).
func (s *Server) MetricsHandler() http.Handler {
	if s.metrics.gatherer == nil {
		return nil
	}
	return promhttp.HandlerFor(s.metrics.gatherer, promhttp.HandlerOpts{})
}

// dirBytes sums the sizes of the files under dir; errors (a file removed
// while walking) only make the sum approximate.
func dirBytes(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}
