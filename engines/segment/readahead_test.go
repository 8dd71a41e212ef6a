package segment

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

// TestWillNeed: the hints (readahead, writeback) work on a file of the OS's
// filesystem (on Linux) and are skipped, without error, on the in-memory
// one.
func TestWillNeed(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		fs   vfs.FS
		path string
		want bool
	}{
		{"disk", vfs.Default, filepath.Join(dir, "f"), runtime.GOOS == "linux"},
		{"memory", vfs.NewMem(), "f", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := c.fs.Create(c.path, vfs.WriteCategoryUnspecified)
			require.NoError(t, err)
			defer f.Close()
			_, err = f.Write(make([]byte, 1<<20))
			require.NoError(t, err)
			advised, err := willNeed(f, 0, 1<<20)
			require.NoError(t, err)
			assert.Equal(t, c.want, advised, "advised")
			// The writeback hint of a write round under SyncInterval and
			// SyncNever takes the same files.
			assert.NoError(t, startWriteback(f, 0, 1<<20), "writeback hint")
		})
	}
}

// TestReadaheadFollowsAStream: hints follow a reader that reads a segment
// in order far from its end, readaheadStep at a time, and only that reader.
func TestReadaheadFollowsAStream(t *testing.T) {
	const mib = 1 << 20
	const size = 64 * mib
	type read struct{ start, end, advised int64 }
	for _, c := range []struct {
		name  string
		reads []read
	}{
		{"a scan from the first frame", []read{
			{fileHeaderLen, mib, mib + readaheadBytes},
			{mib, 2 * mib, mib + readaheadBytes}, // less than a step further: no new hint
			{2 * mib, 5 * mib, 5*mib + readaheadBytes},
		}},
		{"a scan's reads overlap by a header", []read{
			{fileHeaderLen, mib + frameHeaderLen, mib + frameHeaderLen + readaheadBytes},
			{mib, 6*mib + frameHeaderLen, 6*mib + frameHeaderLen + readaheadBytes},
		}},
		{"a read elsewhere is no stream", []read{
			{10 * mib, 11 * mib, 0},
			{30 * mib, 31 * mib, 0},
		}},
		{"a reader that jumps back is no stream", []read{
			{fileHeaderLen, mib, mib + readaheadBytes},
			{mib, 12 * mib, 12*mib + readaheadBytes},
			{0, 20, 12*mib + readaheadBytes},
			{20, mib, mib + readaheadBytes}, // a new stream from the start
		}},
		{"the second read of a stream found mid-segment", []read{
			{20 * mib, 21 * mib, 0},
			{21 * mib, 22 * mib, 22*mib + readaheadBytes},
		}},
		{"near the end", []read{
			{size - readaheadBytes - 2*mib, size - readaheadBytes - mib, 0},
			{size - readaheadBytes - mib, size - readaheadBytes + 1, 0},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := vfs.NewMem()
			f, err := fs.Create("f", vfs.WriteCategoryUnspecified)
			require.NoError(t, err)
			defer f.Close()
			s := newSegment(fs, "", 0)
			s.f = f
			s.written.Store(size)
			s.endPos.Store(size)
			for i, r := range c.reads {
				s.readahead(r.start, r.end)
				assert.Equal(t, r.advised, s.advised.Load(), "after read %d [%d, %d): hinted up to", i, r.start, r.end)
			}
		})
	}
}

// TestScanReadsAheadOnDisk: a cold scan's Reads of a log on disk go
// through the hints (the system calls run) and read what was written; on
// the in-memory FS the same scan skips them.
func TestScanReadsAheadOnDisk(t *testing.T) {
	for _, c := range []struct {
		name string
		fs   vfs.FS
		dir  string
	}{
		{"disk", vfs.Default, t.TempDir()},
		{"memory", vfs.NewMem(), "log"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := engine.Options{FS: c.fs, Sync: engine.SyncNever}
			e, err := Open(c.dir, opts)
			require.NoError(t, err)
			const batches, data = 300, 100_000 // 30 MB: past readaheadBytes
			want := appendN(t, e, batches, 10, fixed(data))
			require.NoError(t, e.Close())
			e, err = Open(c.dir, opts)
			require.NoError(t, err)
			defer e.Close()

			got, _ := scanInto(t, e, nil, 1<<20, true)
			requireBatches(t, want, got, "scan")
			s := e.acquire(0)
			defer s.release()
			assert.Greater(t, s.advised.Load(), int64(readaheadBytes), "hinted up to")
		})
	}
}
