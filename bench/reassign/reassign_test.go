package reassign

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
)

// TestTargetMovesBroker1ToBroker4: every partition keeps its other
// replicas and their order, broker 4 takes broker 1's place.
func TestTargetMovesBroker1ToBroker4(t *testing.T) {
	assert.Equal(t, []int32{4, 2, 3}, target(0))
	assert.Equal(t, []int32{2, 3, 4}, target(1))
	assert.Equal(t, []int32{3, 4, 2}, target(2))
	assert.Equal(t, []int32{1, 2, 3}, assignment[0], "target does not change the assignment")
}

// TestMovedWantsTargetsWithFullISRs: a partition still on its old replicas,
// or on its target with a short ISR, is not moved yet.
func TestMovedWantsTargetsWithFullISRs(t *testing.T) {
	meta := func(isr1 []int32) kadm.Metadata {
		ps := kadm.PartitionDetails{}
		for i := range Partitions {
			ps[int32(i)] = kadm.PartitionDetail{Partition: int32(i), Replicas: target(i), ISR: target(i)}
		}
		p := ps[1]
		p.ISR = isr1
		ps[1] = p
		return kadm.Metadata{Topics: kadm.TopicDetails{Topic: {Topic: Topic, Partitions: ps}}}
	}
	assert.True(t, moved(meta(target(1))))
	assert.False(t, moved(meta([]int32{2, 3})), "broker 4 not in the ISR yet")
	m := meta(target(1))
	p := m.Topics[Topic].Partitions[0]
	p.Replicas = []int32{4, 2, 3, 1}
	m.Topics[Topic].Partitions[0] = p
	assert.False(t, moved(m), "the old replica is still listed")
}

// TestJudge: a run that loses a record, stalls a partition or halves the
// throughput fails its check.
func TestJudge(t *testing.T) {
	good := Run{Engine: "e", Before: 100, During: 60, LongestGap: 0.2, Audit: load.AuditResult{Acked: 10}}
	bad := Run{Engine: "f", Before: 100, During: 40, LongestGap: 2, Audit: load.AuditResult{Acked: 10, Lost: 1}}
	r := &Result{Runs: []Run{good, bad}}
	var verdicts []string
	for _, c := range r.Judge() {
		verdicts = append(verdicts, c.Verdict)
	}
	assert.Equal(t, []string{bench.Pass, bench.Pass, bench.Pass, bench.Fail, bench.Fail, bench.Fail}, verdicts)
}

// TestAckCountsRate: events count in the buckets that begin inside the
// window, and a window before the first or after the last has none.
func TestAckCountsRate(t *testing.T) {
	start := time.Unix(1000, 0)
	c := ackCounts{start: start}
	for i := range 200 { // 100 a second for 2 s
		c.add(start.Add(time.Duration(i) * 10 * time.Millisecond))
	}
	c.add(start.Add(-time.Second)) // before start: the first bucket
	assert.InDelta(t, 100, c.rate(start.Add(500*time.Millisecond), start.Add(1500*time.Millisecond)), 0.01)
	assert.InDelta(t, 0, c.rate(start.Add(3*time.Second), start.Add(4*time.Second)), 0.01)
	assert.InDelta(t, 201.0/2, c.rate(start, start.Add(2*time.Second)), 0.01)
	assert.Zero(t, c.rate(start.Add(time.Second), start.Add(time.Second)))
	assert.Len(t, c.counts, 200, "one count per bucket, not per event")
}
