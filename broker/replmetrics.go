package broker

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minikafka/minikafka/cluster"
)

// replicationMetrics describes replication at each scrape, from the
// partitions' state machines and the metadata image, as Kafka's
// ReplicaManager and controller metrics do:
//
//   - minikafka_under_replicated_partitions, minikafka_under_min_isr_partitions:
//     of the partitions this broker leads, those whose ISR is smaller than
//     their replicas, and than min.insync.replicas (acks=all refused);
//   - minikafka_offline_partitions: partitions with no leader, counted by
//     the active controller only (0 on the others, as Kafka);
//   - minikafka_replica_max_lag_records and _seconds: the largest lag of a
//     follower of a partition led here, behind the leader's durable end and
//     since it was last caught up;
//   - minikafka_high_watermark_lag_records: records appended on the
//     partitions led here and not yet committed (log end - high watermark);
//   - minikafka_replication_bytes_in_total / _out_total: record bytes this
//     broker appended as a follower / served to its followers;
//   - minikafka_isr_shrinks_total / minikafka_isr_expands_total: ISR changes
//     this broker's leaders had committed.
type replicationMetrics struct {
	s                *Server
	shrinks, expands atomic.Int64

	underReplicated, underMinISR, offline, lagRecords, lagSeconds, hwLag *prometheus.Desc
	bytesIn, bytesOut, shrinksDesc, expandsDesc                          *prometheus.Desc
}

func newReplicationMetrics(s *Server) *replicationMetrics {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &replicationMetrics{
		s:               s,
		underReplicated: d("minikafka_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replicas."),
		underMinISR:     d("minikafka_under_min_isr_partitions", "Partitions led here whose ISR is below min.insync.replicas (acks=all refused)."),
		offline:         d("minikafka_offline_partitions", "Partitions without a leader (reported by the active controller)."),
		lagRecords:      d("minikafka_replica_max_lag_records", "Largest lag of a follower behind the leader's durable end, over the partitions led here."),
		lagSeconds:      d("minikafka_replica_max_lag_seconds", "Longest time since a follower of a partition led here was caught up."),
		hwLag:           d("minikafka_high_watermark_lag_records", "Records appended to partitions led here and not yet committed."),
		bytesIn:         d("minikafka_replication_bytes_in_total", "Record bytes appended here as a follower."),
		bytesOut:        d("minikafka_replication_bytes_out_total", "Record bytes served to followers."),
		shrinksDesc:     d("minikafka_isr_shrinks_total", "ISR shrinks committed for partitions led here."),
		expandsDesc:     d("minikafka_isr_expands_total", "ISR expansions committed for partitions led here."),
	}
}

func (m *replicationMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.underReplicated, m.underMinISR, m.offline, m.lagRecords, m.lagSeconds, m.hwLag, m.bytesIn, m.bytesOut, m.shrinksDesc, m.expandsDesc} {
		ch <- d
	}
}

func (m *replicationMetrics) Collect(ch chan<- prometheus.Metric) {
	s := m.s
	now := s.cfg.Clock.Now()
	var under, underMin, hwLag, lagRecs int64
	var lagSecs float64
	var in, out int64
	for _, k := range s.parts.Keys() {
		p, ok := s.parts.Get(k)
		if !ok {
			continue
		}
		i, o := p.ReplicationBytes()
		in, out = in+i, out+o
		st, leads := p.LeaderStatus(now)
		if !leads {
			continue
		}
		if st.UnderReplicated {
			under++
		}
		if st.UnderMinISR {
			underMin++
		}
		hwLag += st.LogEnd - st.HW
		for _, f := range st.Followers {
			lagRecs = max(lagRecs, f.LagOffsets)
			if !f.InISR || f.LagOffsets > 0 {
				lagSecs = max(lagSecs, f.TimeLag.Seconds())
			}
		}
	}
	var offline int64
	if s.quorumActive() {
		offline = offlinePartitions(s.store.Image())
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(m.underReplicated, float64(under))
	gauge(m.underMinISR, float64(underMin))
	gauge(m.offline, float64(offline))
	gauge(m.lagRecords, float64(lagRecs))
	gauge(m.lagSeconds, lagSecs)
	gauge(m.hwLag, float64(hwLag))
	counter(m.bytesIn, float64(in))
	counter(m.bytesOut, float64(out))
	counter(m.shrinksDesc, float64(m.shrinks.Load()))
	counter(m.expandsDesc, float64(m.expands.Load()))
}

func offlinePartitions(img *cluster.Metadata) int64 {
	var n int64
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if p.Leader == cluster.NoLeader {
				n++
			}
		}
	}
	return n
}

// isrChanged counts a committed ISR change of a leader here.
func (m *replicationMetrics) isrChanged(before, after int) {
	switch {
	case after < before:
		m.shrinks.Add(1)
	case after > before:
		m.expands.Add(1)
	}
}
