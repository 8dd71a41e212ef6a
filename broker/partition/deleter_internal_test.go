package partition

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/clock"
)

// A large file is cut from its end one step at a time, each step waiting
// for the injected clock as the rate says; small files are removed whole
// and paced after.
func TestDeleterPacesByTheClock(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "p.1.deleting")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "log"), 0o755))
	big := filepath.Join(dir, "log", "big")
	require.NoError(t, os.WriteFile(big, nil, 0o644))
	require.NoError(t, os.Truncate(big, 2*deleteStep+deleteStep/2)) // sparse: only its size matters
	require.NoError(t, os.WriteFile(filepath.Join(dir, "meta"), make([]byte, 100), 0o644))

	clk := clock.NewManual(time.Unix(0, 0))
	quit := make(chan struct{})
	d := newDeleter(vfs.Default, clk, slog.New(slog.DiscardHandler), deleteStep, false, quit) // a step a second
	d.remove(dir)

	sizeIs := func(want int64) {
		t.Helper()
		require.Eventually(t, func() bool {
			st, err := os.Stat(big)
			return err == nil && st.Size() == want && clk.Pending() == 1
		}, 5*time.Second, time.Millisecond, "big cut to %d bytes, then waiting", want)
	}
	sizeIs(deleteStep + deleteStep/2)
	clk.Advance(999 * time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	assert.FileExists(t, big, "the pause is not over")
	clk.Advance(time.Millisecond)
	sizeIs(deleteStep / 2)
	clk.Advance(time.Second)
	// The rest of big goes whole, and half a step is paced after.
	require.Eventually(t, func() bool { _, err := os.Stat(big); return os.IsNotExist(err) && clk.Pending() == 1 },
		5*time.Second, time.Millisecond)
	assert.DirExists(t, dir)
	clk.Advance(500 * time.Millisecond)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "meta"))
		return os.IsNotExist(err) && clk.Pending() == 1
	}, 5*time.Second, time.Millisecond, "meta removed, its 100 bytes paced")
	clk.Advance(time.Millisecond)
	require.Eventually(t, func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) && clk.Pending() == 0 },
		5*time.Second, time.Millisecond, "then the directory")
	close(quit)
	<-d.done
}

// Manual mode (the simulator's) removes at once, on the caller's goroutine.
func TestDeleterManualRemovesAtOnce(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("p.1.deleting/log", 0o755))
	f, err := fs.Create("p.1.deleting/log/000", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 3*deleteStep))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	d := newDeleter(fs, clock.NewManual(time.Unix(0, 0)), slog.New(slog.DiscardHandler), 1, true, make(chan struct{}))
	d.remove("p.1.deleting")
	_, err = fs.Stat("p.1.deleting")
	assert.True(t, os.IsNotExist(err), "removed: %v", err)
}

func TestTopicDirsListsLiveAndSetAside(t *testing.T) {
	dir := t.TempDir()
	id := uuid.New()
	got, err := TopicDirs(dir, id)
	require.NoError(t, err)
	assert.Empty(t, got, "no partitions directory yet")
	live, other := Key{id, 0}.Dir(), Key{uuid.New(), 0}.Dir()
	for _, n := range []string{live, Key{id, 1}.Dir() + ".5" + deletingSuffix, other, other + ".6" + deletingSuffix} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, partitionsDirName, n), 0o755))
	}
	got, err = TopicDirs(dir, id)
	require.NoError(t, err)
	assert.Equal(t, []string{live, Key{id, 1}.Dir() + ".5" + deletingSuffix}, got)
}

// A file handed over (an engine's Discard) is deleted as a directory's
// files are; one already gone is nothing to do.
func TestDeleterRemovesFiles(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "00000000000000000000.log.deleted")
	require.NoError(t, os.WriteFile(f, make([]byte, 1000), 0o644))
	quit := make(chan struct{})
	d := newDeleter(vfs.Default, clock.Real, slog.New(slog.DiscardHandler), DefaultDeleteRate, false, quit)
	d.remove(filepath.Join(root, "gone"))
	d.remove(f)
	require.Eventually(t, func() bool { _, err := os.Stat(f); return os.IsNotExist(err) }, 5*time.Second, time.Millisecond)
	close(quit)
	<-d.done
}
