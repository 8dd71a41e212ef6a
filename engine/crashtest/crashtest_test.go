package crashtest

import (
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/memory"
)

// The suite must pass an engine that keeps its promises...
func TestSuitePassesACorrectEngine(t *testing.T) {
	Run(t, toyDriver("toy", toyBugs{}))
}

// ...and must fail engines that break them, each in its own way.
func TestPowerLossCatchesBrokenEngines(t *testing.T) {
	cases := []struct {
		name string
		bugs toyBugs
		want string // a phrase of the finding
	}{
		{"SyncThatDoesNotSync", toyBugs{lieSync: true}, "acknowledged"},
		{"AcksFromMemory", toyBugs{holdWrites: true}, "acknowledged"},
		{"TornTailNotCut", toyBugs{noTailCut: true}, "not what was written"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := toyDriver("toy-"+c.name, c.bugs)
			s := seed()
			p := makePlan(rand.New(rand.NewPCG(s, 1)), 40)
			n, err := countOps(d, p)
			require.NoError(t, err, "the workload runs without a crash")
			var found []string
			for k := 1; k <= n && len(found) == 0; k++ {
				for _, prob := range crashAt(d, p, modes[k%2], s, k).problems {
					if strings.Contains(prob, c.want) {
						found = append(found, prob)
					}
				}
			}
			assert.NotEmpty(t, found, "seed %d: no crash point of %d found %q", s, n, c.want)
			t.Logf("finding: %v", found)
		})
	}
}

// A kill loses what an engine acknowledged from user-space memory; the OS
// keeps what it was given, so a Sync that skips the fsync passes Kill (only
// PowerLoss catches that).
func TestKillCatchesAcksFromMemory(t *testing.T) {
	// Eight rounds: one round in five kills the child while it opens the
	// log, before any acknowledgement, and with three rounds all three did
	// so in about one run of 125 (seen once); with eight, one run of 390,000.
	msg := killRounds(t, toyDriver("toy-held", toyBugs{holdWrites: true}), engine.SyncAlways, seed(), 8)
	assert.Contains(t, msg, "acknowledged batch", "Kill finds the acknowledged batches the child lost")
	t.Log(msg)
}

// Under SyncInterval a Sync promises nothing against a power loss but
// everything against a kill, so the same engine fails there too.
func TestKillSyncIntervalCatchesAcksFromMemory(t *testing.T) {
	msg := killRounds(t, toyDriver("toy-held", toyBugs{holdWrites: true}), engine.SyncInterval, seed(), 8)
	assert.Contains(t, msg, "acknowledged batch", "Kill under SyncInterval finds the acknowledged batches the child lost")
	t.Log(msg)
}

func TestRunSkipsWhatDoesNotApply(t *testing.T) {
	Run(t, memory.Driver) // not durable: both subtests skip, and say why
}

func TestCrashFS(t *testing.T) {
	mem, err := newDisk()
	require.NoError(t, err)
	fs := newCrashFS(mem, 4, rand.New(rand.NewPCG(1, 1)), 100, true)
	f, err := fs.Create("/data/f", vfs.WriteCategoryUnspecified) // op 1
	require.NoError(t, err)
	_, err = f.Write([]byte("hello ")) // op 2
	require.NoError(t, err)
	require.NoError(t, f.Sync())       // op 3
	_, err = f.Write([]byte("world!")) // op 4: torn
	require.ErrorIs(t, err, errPowerLost, "the crash op fails")
	assert.Equal(t, 4, fs.opCount())
	_, err = f.Write([]byte("x"))
	assert.ErrorIs(t, err, errPowerLost, "every write after the crash fails")
	assert.ErrorIs(t, f.Sync(), errPowerLost, "every sync after the crash fails")
	_, err = fs.Open("/data/f")
	assert.ErrorIs(t, err, errPowerLost, "every read after the crash fails")
	assert.Equal(t, 4, fs.opCount(), "failed calls are not counted")
	require.NoError(t, f.Close(), "files can still be released")

	// The clone kept all unsynced data (100%): the synced prefix and part of
	// the torn write, never more.
	got := readAllFile(t, fs.clone, "/data/f")
	assert.True(t, strings.HasPrefix(got, "hello "), "synced data survives: %q", got)
	assert.True(t, strings.HasPrefix("hello world!", got) && len(got) < len("hello world!"), "the torn write is a strict prefix: %q", got)
	assert.Contains(t, fs.crashOp, "write /data/f")
}

func TestCrashFSProcessStops(t *testing.T) {
	mem, err := newDisk()
	require.NoError(t, err)
	fs := newCrashFS(mem, 2, rand.New(rand.NewPCG(1, 1)), 100, false)
	f, err := fs.Create("/data/f", vfs.WriteCategoryUnspecified) // op 1
	require.NoError(t, err)
	n, err := f.Write([]byte("hello world!")) // op 2: torn on the clone only
	require.NoError(t, err, "a halted process never sees the crash")
	assert.Equal(t, 12, n)
	assert.True(t, fs.lost())
	_, err = f.Write([]byte(" more"))
	require.NoError(t, err, "calls after the crash go on working")
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	assert.Equal(t, "hello world! more", readAllFile(t, mem, "/data/f"), "the old disk got every write")
	got := readAllFile(t, fs.clone, "/data/f")
	assert.Less(t, len(got), len("hello world!"), "the clone holds only a strict prefix of the torn write: %q", got)
	assert.True(t, strings.HasPrefix("hello world!", got))
}

func TestCrashFSDropsUnsyncedData(t *testing.T) {
	mem, err := newDisk()
	require.NoError(t, err)
	fs := newCrashFS(mem, 0, rand.New(rand.NewPCG(1, 1)), 0, true)
	f, err := fs.Create("/data/f", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	_, err = f.Write([]byte("synced"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, engine.SyncDir(fs, "/data"))
	_, err = f.Write([]byte(" unsynced"))
	require.NoError(t, err)
	g, err := fs.Create("/data/g", vfs.WriteCategoryUnspecified) // its directory entry is never synced
	require.NoError(t, err)
	require.NoError(t, g.Sync())
	fs.crashNow()
	assert.Equal(t, "synced", readAllFile(t, fs.clone, "/data/f"), "with 0%% kept, only synced bytes survive")
	_, err = fs.clone.Stat("/data/g")
	assert.Error(t, err, "a file whose directory was not synced is gone")
}

func readAllFile(t *testing.T, fs vfs.FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

func TestCompare(t *testing.T) {
	b := func(base int64, records int32, size int) engine.Batch { return enginetest.Batch(base, records, size) }
	log := []engine.Batch{b(0, 5, 100), b(5, 5, 100), b(10, 5, 100)}
	cases := []struct {
		name string
		r    recovered
		x    expect
		want string // "" for no finding
	}{
		{"AllThere", recovered{0, 15, log}, expect{batches: log, acked: 15, strict: true}, ""},
		{"UnsyncedTailLost", recovered{0, 5, log[:1]}, expect{batches: log, acked: 5, strict: true}, ""},
		{"AckedTailLost", recovered{0, 5, log[:1]}, expect{batches: log, acked: 10, strict: true}, "acknowledged data lost"},
		{"WrongBytes", recovered{0, 15, []engine.Batch{log[0], b(5, 5, 101), log[2]}}, expect{batches: log, acked: 15, strict: true}, "batch at 5 is"},
		{"StaleAfterTruncate", recovered{0, 15, log}, expect{batches: log[:1], acked: 5, strict: true}, "never written"},
		{"UnknownAllowedAfterKill", recovered{0, 15, log}, expect{batches: log[:1], acked: 5}, ""},
		{"StartLost", recovered{0, 15, log}, expect{batches: log, startLo: 7, startHi: 7, acked: 15, strict: true}, "StartOffset is 0, want 7"},
		{"StartInFlight", recovered{7, 15, log[1:]}, expect{batches: log, startLo: 0, startHi: 7, acked: 15, strict: true}, ""},
		{"MissingInMiddle", recovered{0, 15, []engine.Batch{log[0], b(5, 10, 100)}}, expect{batches: log, acked: 15}, "acknowledged batch [10, 15)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := compare(c.r, c.x)
			if c.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, strings.Join(got, "\n"), c.want)
		})
	}
}

func TestRunPattern(t *testing.T) {
	assert.Equal(t, "^TestCrash$/^Kill$", runPattern("TestCrash/Kill"))
	assert.Equal(t, `^Test\.x$/^a\+b$`, runPattern("Test.x/a+b"))
}

func TestChildLines(t *testing.T) {
	var r childRun
	for _, l := range []string{"opening", "ack 10 3 100", "del 7", "deleted 7", "ack 13 x 5", "PASS", "ack 1 2"} {
		r.add(l)
	}
	assert.True(t, r.opening)
	if assert.Len(t, r.acks, 1) {
		assert.Equal(t, enginetest.Batch(10, 3, 100), r.acks[0], "an ack is rebuilt from its offsets")
	}
	assert.Equal(t, []int64{7}, r.dels)
	assert.Equal(t, []int64{7}, r.deleted)
	assert.Equal(t, []string{"ack 13 x 5", "PASS", "ack 1 2"}, r.other, "anything else is kept for the report")
}

// The store sweeps must fail stores that break the Store contract across
// a crash, each in its own way.
func TestStorePowerLossCatchesBrokenStores(t *testing.T) {
	lyingShared := toyDriver("toy-shared", toyBugs{})
	lyingShared.Caps.SharedCommit = true // a DirStore: each log syncs alone
	unsyncedDelete := toyDriver("toy-delete", toyBugs{})
	unsyncedDelete.OpenStore = func(dir string, opts engine.Options) (engine.Store, error) {
		s, err := engine.OpenDirStore(unsyncedDelete, dir, opts)
		if err != nil {
			return nil, err
		}
		return &unsyncedDeletes{DirStore: s, fs: opts.WithDefaults().FS, dir: dir}, nil
	}
	cases := []struct {
		name string
		d    engine.Driver
		want string
	}{
		{"SharedCommitThatIsNot", lyingShared, "acknowledged"},
		{"DeleteNotDurable", unsyncedDelete, "came back"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := seed()
			p := makeStorePlan(rand.New(rand.NewPCG(s, 1)), 60)
			n, err := countStoreOps(c.d, p)
			require.NoError(t, err, "the store workload runs without a crash")
			var found []string
			for k := 1; k <= n && len(found) == 0; k++ {
				for _, prob := range crashStoreAt(c.d, p, modes[k%2], s, k).problems {
					if strings.Contains(prob, c.want) {
						found = append(found, prob)
					}
				}
			}
			assert.NotEmpty(t, found, "seed %d: no crash point of %d found %q", s, n, c.want)
			t.Logf("finding: %v", found)
		})
	}
}

// unsyncedDeletes is a DirStore whose Delete renames a log aside and
// removes it without syncing the store's directory.
type unsyncedDeletes struct {
	*engine.DirStore
	fs  vfs.FS
	dir string
}

func (s *unsyncedDeletes) Delete(id engine.LogID) error {
	path := s.fs.PathJoin(s.dir, id.String())
	if err := s.fs.Rename(path, path+".deleting"); err != nil {
		return err
	}
	return s.fs.RemoveAll(path + ".deleting")
}

// Store/Kill loses what a store's logs acknowledged from memory.
func TestStoreKillCatchesAcksFromMemory(t *testing.T) {
	msg := storeKillRounds(t, toyDriver("toy-held", toyBugs{holdWrites: true}), seed(), 8)
	assert.Contains(t, msg, "acknowledged batch", "Store/Kill finds the acknowledged batches the child lost")
	t.Log(msg)
}
