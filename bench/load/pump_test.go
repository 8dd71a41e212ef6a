package load

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

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
