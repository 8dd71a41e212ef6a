package producer_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/producer"
	"github.com/minikafka/minikafka/engine"
)

func sampleState() *producer.State {
	s := producer.NewState()
	var off int64
	for id := int64(0); id < 4; id++ {
		for i := int32(0); i < int32(id)*3; i++ {
			s.Record(hdr(id, int16(id), i*2, 2), off, 1000)
			off += 2
		}
	}
	s.Record(hdr(99, 0, 5, 1), off, 1000)
	return s
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := sampleState()
	b := s.MarshalSnapshot(1234)
	got, off, err := producer.UnmarshalSnapshot(b)
	require.NoError(t, err)
	assert.Equal(t, int64(1234), off)
	assert.Equal(t, s.Entries(), got.Entries())

	empty, off, err := producer.UnmarshalSnapshot(producer.NewState().MarshalSnapshot(0))
	require.NoError(t, err)
	assert.Equal(t, int64(0), off)
	assert.Equal(t, 0, empty.Len())
}

func TestSnapshotDamage(t *testing.T) {
	good := sampleState().MarshalSnapshot(77)
	cases := map[string][]byte{
		"empty":         nil,
		"truncated":     good[:len(good)-1],
		"trailing byte": append(bytes.Clone(good), 0),
		"bad magic":     append([]byte("XXXX"), good[4:]...),
	}
	for i := 4; i < len(good); i += 7 {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		cases[fmt.Sprintf("flipped byte %d", i)] = b
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := producer.UnmarshalSnapshot(b)
			assert.ErrorIs(t, err, producer.ErrBadSnapshot)
		})
	}
}

func TestSnapshotFile(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/p", 0o755))
	_, _, err := producer.ReadSnapshot(fs, "/p/producer.snapshot")
	require.ErrorIs(t, err, producer.ErrNoSnapshot)

	s := sampleState()
	require.NoError(t, producer.WriteSnapshot(fs, "/p/producer.snapshot", s, 50))
	got, off, err := producer.ReadSnapshot(fs, "/p/producer.snapshot")
	require.NoError(t, err)
	assert.Equal(t, int64(50), off)
	assert.Equal(t, s.Entries(), got.Entries())
}

func TestIDAllocatorNeverRepeats(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/d", 0o755))
	seen := map[int64]bool{}
	for restart := 0; restart < 4; restart++ {
		a, err := producer.OpenIDAllocator(fs, "/d/producer-ids", 3)
		require.NoError(t, err)
		for i := 0; i < restart*2+1; i++ {
			id, err := a.Next()
			require.NoError(t, err)
			require.False(t, seen[id], "id %d handed out twice (restart %d)", id, restart)
			require.GreaterOrEqual(t, id, int64(0))
			seen[id] = true
		}
	}
	assert.Len(t, seen, 1+3+5+7)
}

func TestIDAllocatorCrashKeepsReservation(t *testing.T) {
	mem := vfs.NewCrashableMem()
	require.NoError(t, mem.MkdirAll("/d", 0o755))
	require.NoError(t, engine.SyncDir(mem, "/"))
	a, err := producer.OpenIDAllocator(mem, "/d/producer-ids", 10)
	require.NoError(t, err)
	first, err := a.Next()
	require.NoError(t, err)
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	b, err := producer.OpenIDAllocator(crashed, "/d/producer-ids", 10)
	require.NoError(t, err)
	id, err := b.Next()
	require.NoError(t, err)
	assert.Greater(t, id, first, "after a crash the reserved block is skipped, not reused")
}

func TestIDAllocatorDamagedFile(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("/ids", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	_, err = f.Write([]byte("MKPI garbage garbage"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = producer.OpenIDAllocator(fs, "/ids", 0)
	require.True(t, errors.Is(err, engine.ErrCorrupt), "error %v", err)
}
