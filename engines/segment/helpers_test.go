package segment

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// Helpers for this package's own tests (the contract itself is enginetest's).

const testDir = "log"

// newMem returns a crashable in-memory filesystem whose root is durable.
func newMem(t *testing.T) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewCrashableMem()
	require.NoError(t, engine.SyncDir(fs, "/"))
	return fs
}

// open opens the engine on fs and closes it when the test ends, unless the
// test closed it first.
func open(t *testing.T, fs vfs.FS, opts engine.Options) *Engine {
	t.Helper()
	opts.FS = fs
	e, err := Open(testDir, opts)
	require.NoError(t, err, "open")
	t.Cleanup(func() {
		if err := e.Close(); err != nil && !errors.Is(err, engine.ErrClosed) {
			t.Logf("close at cleanup: %v", err)
		}
	})
	return e
}

// appendN appends n batches at the end, with sizes from size(i).
func appendN(t *testing.T, e *Engine, n int, records int32, size func(i int) int) []engine.Batch {
	t.Helper()
	var out []engine.Batch
	for i := range n {
		b := enginetest.Batch(e.EndOffset(), records, size(i))
		require.NoError(t, e.Append(b))
		out = append(out, b)
	}
	return out
}

func fixed(n int) func(int) int { return func(int) int { return n } }

// requireBatches checks that got is want, batch for batch.
func requireBatches(t *testing.T, want, got []engine.Batch, msg string) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: batch count", msg)
	for i := range want {
		require.Equal(t, want[i].BaseOffset, got[i].BaseOffset, "%s: batch %d base", msg, i)
		require.Equal(t, want[i].Records, got[i].Records, "%s: batch %d records", msg, i)
		require.Equal(t, want[i].Data, got[i].Data, "%s: batch %d data", msg, i)
	}
}

// crash returns what a power loss leaves of fs now: synced data plus pct
// percent of the rest.
func crash(fs *vfs.MemFS, pct int) *vfs.MemFS {
	if pct == 0 {
		return fs.CrashClone(vfs.CrashCloneCfg{})
	}
	return fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: newRand()})
}

func readFile(t *testing.T, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return b
}

// writeFile replaces path with b, durably.
func writeFile(t *testing.T, fs vfs.FS, path string, b []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	_, err = f.Write(slices.Clone(b))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// files lists the directory's files with the given suffix, in order.
func files(t *testing.T, fs vfs.FS, suffix string) []string {
	t.Helper()
	names, err := fs.List(testDir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, suffix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func path(name string) string { return testDir + "/" + name }
