package crashtest

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// errPowerLost is what every filesystem call returns once the simulated
// machine has lost power. Engines see it wrapped with the operation.
var errPowerLost = errors.New("crashtest: injected error: the machine lost power")

// crashFS is a vfs.FS over a crashable MemFS that counts the operations that
// change what is on disk (writes, syncs, creates, renames, removes, links,
// directory creation) and loses power at the crashAt-th of them:
//
//   - a write at the crash point lands only a random prefix of its bytes (a
//     torn write); any other operation at the crash point does not happen;
//   - the surviving disk is a CrashClone taken at that instant: everything
//     synced, plus a random share (unsyncedPct) of what was not;
//   - from then on, with failAfter, every call fails with errPowerLost;
//     without it, calls go on working on a disk that no longer matters, as
//     if the process had stopped at the crash and did not know it.
//
// Every mutating call runs under mu, and so does the crash, so an fsync that
// returned nil to the engine is always in the clone: an engine cannot record
// an acknowledgement for data the clone misses. Reads are not counted and
// need no ordering; they fail after the crash too.
type crashFS struct {
	mem *vfs.MemFS

	mu          sync.Mutex
	ops         int // mutating operations seen so far, the crash one included
	crashAt     int // 1-based; 0 means never
	rng         *rand.Rand
	unsyncedPct int
	failAfter   bool
	clone       *vfs.MemFS
	crashOp     string   // the operation the power went out on
	recent      []string // the last few operations before it, oldest first
	crashed     atomic.Bool
}

const recentOps = 6

var _ vfs.FS = (*crashFS)(nil)

func newCrashFS(mem *vfs.MemFS, crashAt int, rng *rand.Rand, unsyncedPct int, failAfter bool) *crashFS {
	return &crashFS{mem: mem, crashAt: crashAt, rng: rng, unsyncedPct: unsyncedPct, failAfter: failAfter}
}

// stage is which part of an operation apply performs.
type stage int

const (
	whole  stage = iota // no crash during it
	before              // the part that reaches the disk before the power goes out
	after               // the rest, on the old disk, when the process does not see the crash
)

// mutate runs one counted operation through apply. At the crash point, the
// part of it that lands (a prefix of a write, nothing of anything else) is
// applied, the clone is taken, and then either the call fails (failAfter)
// or the rest is applied to the old disk and the call succeeds: the halted
// process never learns of the crash.
func (fs *crashFS) mutate(desc string, apply func(stage) error) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.crashed.Load() {
		if fs.failAfter {
			return fmt.Errorf("%s: %w", desc, errPowerLost)
		}
		return apply(whole) // on the old disk: the clone is already taken
	}
	fs.ops++
	if fs.ops != fs.crashAt {
		fs.note(desc)
		return apply(whole)
	}
	_ = apply(before) // whatever it managed before the power went out
	fs.crashLocked(desc)
	if fs.failAfter {
		return fmt.Errorf("%s: %w", desc, errPowerLost)
	}
	return apply(after)
}

// allOrNothing adapts an operation that either happens or does not (all but
// writes) to mutate's stages: none of it lands before a crash.
func allOrNothing(op func() error) func(stage) error {
	return func(s stage) error {
		if s == before {
			return nil
		}
		return op()
	}
}

func (fs *crashFS) note(desc string) {
	if len(fs.recent) == recentOps {
		fs.recent = fs.recent[1:]
	}
	fs.recent = append(fs.recent, desc)
}

func (fs *crashFS) crashLocked(desc string) {
	fs.crashOp = desc
	fs.clone = fs.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: fs.unsyncedPct, RNG: fs.rng})
	fs.crashed.Store(true)
}

// crashNow loses power between operations (the workload ended before the
// crash point); it does nothing if the power is already out.
func (fs *crashFS) crashNow() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !fs.crashed.Load() {
		fs.crashLocked("(after the workload's last operation)")
	}
}

// crashedAt is the operation the power went out on, if it has.
func (fs *crashFS) crashedAt() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.crashOp
}

// lost reports whether the power has gone out.
func (fs *crashFS) lost() bool { return fs.crashed.Load() }

// opCount is how many mutating operations the filesystem has seen.
func (fs *crashFS) opCount() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.ops
}

// read guards a call that changes nothing: it only fails after the crash,
// with failAfter.
func (fs *crashFS) read(desc string) error {
	if fs.failAfter && fs.crashed.Load() {
		return fmt.Errorf("%s: %w", desc, errPowerLost)
	}
	return nil
}

// tornLen is how much of an n-byte write lands when the power goes out
// during it: a strict prefix, possibly nothing. The caller holds mu.
func (fs *crashFS) tornLen(n int) int {
	if n == 0 {
		return 0
	}
	return fs.rng.IntN(n)
}

func (fs *crashFS) wrap(name string, f vfs.File) vfs.File {
	return &crashFile{fs: fs, name: name, f: f}
}

// opening counts an operation that creates or opens a file for writing,
// all or nothing, and wraps the file it opens as name.
func (fs *crashFS) opening(what, name string, open func() (vfs.File, error)) (vfs.File, error) {
	var f vfs.File
	err := fs.mutate(what, allOrNothing(func() error {
		var err error
		f, err = open()
		return err
	}))
	if err != nil {
		return nil, err
	}
	return fs.wrap(name, f), nil
}

func (fs *crashFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.opening("create "+name, name, func() (vfs.File, error) { return fs.mem.Create(name, category) })
}

func (fs *crashFS) Link(oldname, newname string) error {
	return fs.mutate("link "+oldname+" "+newname, allOrNothing(func() error {
		return fs.mem.Link(oldname, newname)
	}))
}

func (fs *crashFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := fs.read("open " + name); err != nil {
		return nil, err
	}
	f, err := fs.mem.Open(name)
	if err != nil {
		return nil, err
	}
	wf := fs.wrap(name, f)
	for _, o := range opts {
		o.Apply(wf)
	}
	return wf, nil
}

func (fs *crashFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	wf, err := fs.opening("open-rw "+name, name, func() (vfs.File, error) { return fs.mem.OpenReadWrite(name, category) })
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o.Apply(wf)
	}
	return wf, nil
}

func (fs *crashFS) OpenDir(name string) (vfs.File, error) {
	if err := fs.read("open dir " + name); err != nil {
		return nil, err
	}
	f, err := fs.mem.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return fs.wrap(name, f), nil
}

func (fs *crashFS) Remove(name string) error {
	return fs.mutate("remove "+name, allOrNothing(func() error {
		return fs.mem.Remove(name)
	}))
}

func (fs *crashFS) RemoveAll(name string) error {
	return fs.mutate("remove-all "+name, allOrNothing(func() error {
		return fs.mem.RemoveAll(name)
	}))
}

func (fs *crashFS) Rename(oldname, newname string) error {
	return fs.mutate("rename "+oldname+" "+newname, allOrNothing(func() error {
		return fs.mem.Rename(oldname, newname)
	}))
}

func (fs *crashFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.opening("reuse "+oldname+" "+newname, newname, func() (vfs.File, error) {
		return fs.mem.ReuseForWrite(oldname, newname, category)
	})
}

func (fs *crashFS) MkdirAll(dir string, perm os.FileMode) error {
	return fs.mutate("mkdir "+dir, allOrNothing(func() error {
		return fs.mem.MkdirAll(dir, perm)
	}))
}

func (fs *crashFS) Lock(name string) (io.Closer, error) {
	var c io.Closer
	err := fs.mutate("lock "+name, allOrNothing(func() error {
		var err error
		c, err = fs.mem.Lock(name)
		return err
	}))
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (fs *crashFS) List(dir string) ([]string, error) {
	if err := fs.read("list " + dir); err != nil {
		return nil, err
	}
	return fs.mem.List(dir)
}

func (fs *crashFS) Stat(name string) (vfs.FileInfo, error) {
	if err := fs.read("stat " + name); err != nil {
		return nil, err
	}
	return fs.mem.Stat(name)
}

func (fs *crashFS) PathBase(p string) string       { return fs.mem.PathBase(p) }
func (fs *crashFS) PathJoin(elem ...string) string { return fs.mem.PathJoin(elem...) }
func (fs *crashFS) PathDir(p string) string        { return fs.mem.PathDir(p) }
func (fs *crashFS) Unwrap() vfs.FS                 { return fs.mem }
func (fs *crashFS) GetDiskUsage(p string) (vfs.DiskUsage, error) {
	if err := fs.read("disk usage " + p); err != nil {
		return vfs.DiskUsage{}, err
	}
	return fs.mem.GetDiskUsage(p)
}

// crashFile routes a file's calls through its crashFS.
type crashFile struct {
	fs   *crashFS
	name string
	f    vfs.File
}

// Close releases the file even after the crash: closing writes nothing, and
// the engine must be able to let go of its handles.
func (f *crashFile) Close() error { return f.f.Close() }

func (f *crashFile) Read(p []byte) (int, error) {
	if err := f.fs.read("read " + f.name); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *crashFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.read("read " + f.name); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *crashFile) Write(p []byte) (int, error) {
	n, landed := 0, 0
	err := f.fs.mutate(fmt.Sprintf("write %s (%d bytes)", f.name, len(p)), func(s stage) error {
		var err error
		switch s {
		case before:
			landed = f.fs.tornLen(len(p))
			_, err = f.f.Write(p[:landed])
		case after:
			_, err = f.f.Write(p[landed:])
			n = len(p)
		default:
			n, err = f.f.Write(p)
		}
		return err
	})
	return n, err
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	n, landed := 0, 0
	err := f.fs.mutate(fmt.Sprintf("write %s (%d bytes at %d)", f.name, len(p), off), func(s stage) error {
		var err error
		switch s {
		case before:
			landed = f.fs.tornLen(len(p))
			_, err = f.f.WriteAt(p[:landed], off)
		case after:
			_, err = f.f.WriteAt(p[landed:], off+int64(landed))
			n = len(p)
		default:
			n, err = f.f.WriteAt(p, off)
		}
		return err
	})
	return n, err
}

// reading runs op, which changes no contents, unless the disk is gone.
func (f *crashFile) reading(what string, op func() error) error {
	if err := f.fs.read(what + " " + f.name); err != nil {
		return err
	}
	return op()
}

// Preallocate is not counted: it changes no contents (MemFS ignores it).
func (f *crashFile) Preallocate(offset, length int64) error {
	return f.reading("preallocate", func() error { return f.f.Preallocate(offset, length) })
}

func (f *crashFile) Stat() (vfs.FileInfo, error) {
	if err := f.fs.read("stat " + f.name); err != nil {
		return nil, err
	}
	return f.f.Stat()
}

func (f *crashFile) Sync() error { return f.fs.mutate("sync "+f.name, allOrNothing(f.f.Sync)) }

func (f *crashFile) SyncData() error {
	return f.fs.mutate("syncdata "+f.name, allOrNothing(f.f.SyncData))
}

func (f *crashFile) SyncTo(length int64) (bool, error) {
	full := false
	err := f.fs.mutate(fmt.Sprintf("syncto %s %d", f.name, length), allOrNothing(func() error {
		var err error
		full, err = f.f.SyncTo(length)
		return err
	}))
	return full, err
}

func (f *crashFile) Prefetch(offset, length int64) error {
	return f.reading("prefetch", func() error { return f.f.Prefetch(offset, length) })
}

func (f *crashFile) Fd() uintptr { return f.f.Fd() }
