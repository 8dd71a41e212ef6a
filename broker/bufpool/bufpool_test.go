package bufpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGetSizes(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 4097, 1 << 20, 16 << 20, 16<<20 + 1} {
		b := Get(n)
		require.Len(t, b, n, "Get(%d) has length n", n)
		Put(b)
	}
}

// TestPoison: a poisoned Put overwrites the buffer, so a holder that kept
// a reference sees PoisonByte, not its data.
func TestPoison(t *testing.T) {
	SetPoison(true)
	t.Cleanup(func() { SetPoison(false) })
	b := Get(8 << 10)
	for i := range b {
		b[i] = 1
	}
	kept := b[100:200]
	var l Lease
	l.Hold(b)
	l.Release()
	for _, x := range kept {
		require.Equal(t, byte(PoisonByte), x, "a released buffer is poisoned")
	}
	var nilLease *Lease
	nilLease.Hold(b) // no-op
	nilLease.Release()
	assert.Equal(t, byte(PoisonByte), kept[0])
}
