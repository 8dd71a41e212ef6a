package node

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestQuotaMeasuresTheLastWindow(t *testing.T) {
	q := NewQuota()
	t0 := time.Unix(1000, 0)
	q.Record(t0, 1<<30)
	require.False(t, q.Exceeded(t0), "no limit")
	require.False(t, q.Limited())

	q.SetLimit(1000)
	require.True(t, q.Limited())
	require.True(t, q.Exceeded(t0))
	require.True(t, q.Exceeded(t0.Add(QuotaWindow-time.Millisecond)))
	require.False(t, q.Exceeded(t0.Add(QuotaWindow)), "the sample left the window")

	t1 := t0.Add(10 * time.Second)
	for i := range 9 {
		q.Record(t1.Add(time.Duration(i)*90*time.Millisecond), 100)
	}
	require.Equal(t, int64(100), q.Allowance(t1.Add(900*time.Millisecond)), "900 bytes in a window of 1000 B/s")
	require.False(t, q.Exceeded(t1.Add(900*time.Millisecond)))
	q.Record(t1.Add(950*time.Millisecond), 100)
	require.True(t, q.Exceeded(t1.Add(950*time.Millisecond)), "1000 bytes: nothing more")
	require.False(t, q.Exceeded(t1.Add(1100*time.Millisecond)), "the first samples aged out")

	q.SetLimit(math.MaxInt64)
	require.False(t, q.Exceeded(t1.Add(950*time.Millisecond)))
	require.Equal(t, int64(math.MaxInt64), q.Allowance(t1))
}
