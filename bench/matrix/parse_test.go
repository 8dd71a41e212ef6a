package matrix

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCounters(t *testing.T) {
	text := `# HELP minikafka_sync_duration_seconds Time each sync round took.
# TYPE minikafka_sync_duration_seconds histogram
minikafka_sync_duration_seconds_bucket{engine="segment",le="5e-05"} 3
minikafka_sync_duration_seconds_bucket{engine="segment",le="+Inf"} 120
minikafka_sync_duration_seconds_sum{engine="segment"} 0.25
minikafka_sync_duration_seconds_count{engine="segment"} 120
# TYPE minikafka_sync_rounds_total counter
minikafka_sync_rounds_total{engine="segment"} 120
minikafka_sync_rounds_total{engine="pebble"} 5
# TYPE minikafka_group_commit_batch_size histogram
minikafka_group_commit_batch_size_bucket{engine="segment",le="+Inf"} 100
minikafka_group_commit_batch_size_sum{engine="segment"} 300
minikafka_group_commit_batch_size_count{engine="segment"} 100
`
	got, err := parseCounters(strings.NewReader(text))
	require.NoError(t, err)
	assert.Equal(t, BrokerCounters{Fsyncs: 125, WaitersSum: 300, WaitersCount: 100}, got, "label sets are summed")

	got, err = parseCounters(strings.NewReader("# TYPE other counter\nother 1\n"))
	require.NoError(t, err)
	assert.Equal(t, BrokerCounters{Fsyncs: -1}, got, "no sync rounds exported: none counted")

	_, err = parseCounters(strings.NewReader(metricFsyncs + " nope\n"))
	assert.Error(t, err)
}

func TestProfilePoints(t *testing.T) {
	p := Profiles["full"]
	pts := p.Points()
	ref := -1
	for i, pt := range pts {
		if pt.Workload == Reference {
			ref = i
		}
		for j := range i {
			assert.NotEqual(t, pts[j].Workload, pt.Workload, "points are distinct")
		}
	}
	require.GreaterOrEqual(t, ref, 0, "the reference point is in the plan")
	assert.True(t, pts[ref].In(SliceConcurrency) && pts[ref].In(SliceSize), "the reference belongs to both sweeps")
	assert.True(t, pts[ref].Consume)
	assert.Len(t, pts, len(p.Concurrency)+len(p.Sizes)-1+len(p.Producers)+len(p.Variants))

	for _, name := range ProfileNames() {
		t.Run(name, func(t *testing.T) {
			q := Profiles[name]
			assert.Positive(t, q.Reps)
			assert.Positive(t, q.Duration)
			assert.Contains(t, q.Concurrency, Reference.InFlight, "the reference point is swept")
			assert.NotEmpty(t, q.DescribePlan())
		})
	}
}

func TestApplies(t *testing.T) {
	interval := Workload{RecordBytes: 1024, InFlight: 256, Acks: "all", Sync: "interval"}
	acks1 := Workload{RecordBytes: 1024, InFlight: 256, Acks: "1", Sync: "always"}
	cases := []struct {
		name, kind string
		w          Workload
		want       bool
	}{
		{"segment", KindEngine, Reference, true},
		{"segment", KindEngine, acks1, true},
		{"memory", KindReference, interval, false},
		{"memory", KindReference, Reference, true},
		{"kfake", KindPeer, acks1, false},
		{"nats", KindPeer, interval, true},
		{"nats", KindPeer, acks1, false},
		{"nats", KindPeer, Workload{RecordBytes: 1024, InFlight: 256, Acks: "all", Sync: "always", Producers: 16}, false},
		{"kfake", KindPeer, Workload{RecordBytes: 1024, InFlight: 256, Acks: "all", Sync: "always", Producers: 16}, true},
	}
	for _, c := range cases {
		t.Run(c.name+" "+c.w.Key(), func(t *testing.T) {
			assert.Equal(t, c.want, Applies(c.name, c.kind, c.w))
		})
	}
}

func TestSpecRecords(t *testing.T) {
	assert.Equal(t, int64(0), Spec{}.Records(), "no cap")
	assert.Equal(t, int64(1024), Spec{Workload: Workload{RecordBytes: 1024}, MaxBytes: 1 << 20}.Records())
	assert.Equal(t, int64(1), Spec{Workload: Workload{RecordBytes: 1 << 20}, MaxBytes: 10}.Records(), "at least one record")
}

func TestWorkloadNames(t *testing.T) {
	assert.Equal(t, "1KiB-256-acks=all-sync=always", Reference.Key())
	many := Reference
	many.Producers = 64
	assert.Equal(t, "1KiB-256p64-acks=all-sync=always", many.Key())
	assert.Equal(t, 64, many.Clients())
	assert.Equal(t, 4, many.PerClient())
	assert.Equal(t, 1, Reference.Clients())
	assert.Equal(t, "100B", SizeName(100))
	assert.Equal(t, "16KiB", SizeName(16384))
	assert.Equal(t, "1000B", SizeName(1000))
}
