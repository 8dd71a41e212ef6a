package pebble_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	pebbledb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/pebble"
)

const (
	walBlockBytes  = 32 << 10 // pebble's WAL block
	diskBlockBytes = 4 << 10  // the unit in which the crashable MemFS keeps or drops unsynced data
	storeDir       = "/p0/db" // where pebble.Open("/p0") keeps the store
)

// TestRecoveredLogHasNoHole reproduces the crash suite's seed 1001: after a
// power loss, the log recovered from a new store's WAL must be a prefix of
// what was appended, never a later batch without an earlier one.
//
// The synced end of the WAL falls in the last 40 bytes of its first 32 KiB
// block (one position per subtest), batch B is appended there, then C after
// it, and the disk loses the 4 KiB block holding the synced end (so the
// bytes after it read as zeros) but keeps the next one, which holds the rest
// of B and all of C: a state a power loss can leave. Before the engine made
// a new store's first WAL use the WAL sync chunk format, pebble's replay
// skipped B, whose first bytes were in the zeroed block tail, and recovered C.
func TestRecoveredLogHasNoHole(t *testing.T) {
	// A probe finds where the synced end falls with no extra filler bytes;
	// one more data byte in the filler batch moves it by one byte.
	synced0 := writeUntilSynced(t, vfs.NewCrashableMem(), 0)
	first := walBlockBytes - 40 - synced0
	require.GreaterOrEqual(t, first, 0, "the probe's synced end %d is already in the block's last 40 bytes", synced0)
	for extra := first; extra < first+40; extra++ {
		t.Run(fmt.Sprintf("synced_end_%d_bytes_before_block_end", walBlockBytes-synced0-extra), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			e, want := openAndFill(t, fs, extra)
			synced := fs.CrashClone(vfs.CrashCloneCfg{})
			syncedEnd := e.EndOffset()
			for _, size := range []int{1000, 100} { // B, spanning the block boundary, then C
				b := enginetest.Batch(e.EndOffset(), 2, size)
				require.NoError(t, e.Append(b))
				want = append(want, b)
			}
			require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
			crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 2))})
			require.NoError(t, e.Close())
			dropSyncedEndBlock(t, synced, crashed)

			r, err := pebble.Open("/p0", engine.Options{FS: crashed})
			require.NoError(t, err)
			defer r.Close()
			got := enginetest.ReadAll(t, r, 1<<20)
			require.LessOrEqual(t, len(got), len(want))
			assert.Equal(t, want[:len(got)], got, "the recovered log is a prefix of what was appended")
			assert.GreaterOrEqual(t, r.EndOffset(), syncedEnd, "every synced batch is recovered")
		})
	}
}

// openAndFill opens a new engine on fs and appends batches of about 28 KiB
// in all, the last extra bytes longer, each followed by a Sync.
func openAndFill(t *testing.T, fs vfs.FS, extra int) (engine.LogEngine, []engine.Batch) {
	e, err := pebble.Open("/p0", engine.Options{FS: fs})
	require.NoError(t, err)
	var appended []engine.Batch
	for _, size := range []int{6000, 6000, 6000, 6000, 3000 + extra} {
		b := enginetest.Batch(e.EndOffset(), 3, size)
		require.NoError(t, e.Append(b))
		require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
		appended = append(appended, b)
	}
	return e, appended
}

// writeUntilSynced runs openAndFill and returns the synced length of the
// WAL holding the batches.
func writeUntilSynced(t *testing.T, fs *vfs.MemFS, extra int) int {
	e, _ := openAndFill(t, fs, extra)
	defer e.Close()
	synced := fs.CrashClone(vfs.CrashCloneCfg{})
	var longest int
	for _, n := range walFiles(t, synced) {
		longest = max(longest, len(readFile(t, synced, n)))
	}
	return longest
}

// dropSyncedEndBlock makes crashed lose, in every WAL, the 4 KiB block that
// holds the end of what synced has of it: that block reverts to its synced
// bytes, zeros after them, while the blocks after it keep what was written.
func dropSyncedEndBlock(t *testing.T, synced, crashed *vfs.MemFS) {
	for _, name := range walFiles(t, crashed) {
		var old []byte
		if _, err := synced.Stat(name); err == nil {
			old = readFile(t, synced, name)
		}
		size := len(readFile(t, crashed, name))
		if size <= len(old) || len(old)%diskBlockBytes == 0 {
			continue
		}
		from := len(old) / diskBlockBytes * diskBlockBytes
		block := make([]byte, min(from+diskBlockBytes, size)-from)
		copy(block, old[from:])
		f, err := crashed.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
		require.NoError(t, err)
		_, err = f.WriteAt(block, int64(from))
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
}

func walFiles(t *testing.T, fs vfs.FS) []string {
	names, err := fs.List(storeDir)
	require.NoError(t, err)
	var wals []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			wals = append(wals, fs.PathJoin(storeDir, n))
		}
	}
	require.NotEmpty(t, wals, "the store has a WAL")
	return wals
}

func readFile(t *testing.T, fs vfs.FS, name string) []byte {
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	return data
}

// TestNewStoreWritesWALSyncChunks checks the mechanism behind
// TestRecoveredLogHasNoHole: batches appended to a new store go to a WAL in
// pebble's WAL sync chunk format (chunk types 9 to 12), not in the older
// recyclable format pebble gives a store it creates itself. The store is
// created at the newest format from the start: one WAL (no rotation) and the
// format-version marker at its first iteration (no ratchet through the
// versions in between, each a marker move with its syncs).
func TestNewStoreWritesWALSyncChunks(t *testing.T) {
	fs := vfs.NewMem()
	e, err := pebble.Open("/p0", engine.Options{FS: fs})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.Append(enginetest.Batch(0, 1, 100)))
	require.NoError(t, e.Sync(context.Background(), 1))
	wals := walFiles(t, fs)
	require.Len(t, wals, 1, "a new store writes to its first WAL")
	data := readFile(t, fs, wals[0])
	require.Greater(t, len(data), 100, "the batch is in the WAL")
	const chunkType = 6 // checksum (4 bytes), length (2), type (1)
	assert.Contains(t, []byte{9, 10, 11, 12}, data[chunkType], "the WAL's first chunk is a WAL sync chunk")

	desc, err := pebbledb.Peek(storeDir, fs)
	require.NoError(t, err)
	assert.Equal(t, pebbledb.FormatNewest, desc.FormatMajorVersion)
	names, err := fs.List(storeDir)
	require.NoError(t, err)
	assert.Contains(t, names, "marker.format-version.000001."+pebbledb.FormatNewest.String())
}
