package quorum

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var errPowerLost = errors.New("test: the machine lost power")

// crashFS is a vfs.FS over a crashable MemFS that counts the operations
// that change the disk and loses power at the crashAt-th (as engine/crashtest
// does): a write at that point lands a random prefix of its bytes, any other
// operation does not happen; the surviving disk is a CrashClone taken then
// (everything synced, plus a random share of what was not); every later
// mutating call fails with errPowerLost. crashAt 0 never crashes.
type crashFS struct {
	vfs.FS // reads go straight to the MemFS
	mem    *vfs.MemFS

	mu          sync.Mutex
	ops         int
	crashAt     int
	rng         *rand.Rand
	unsyncedPct int
	clone       *vfs.MemFS
	crashOp     string
}

func newCrashFS(mem *vfs.MemFS, crashAt int, rng *rand.Rand, unsyncedPct int) *crashFS {
	return &crashFS{FS: mem, mem: mem, crashAt: crashAt, rng: rng, unsyncedPct: unsyncedPct}
}

// mutate runs a counted operation; torn is what lands of it at the crash.
func (fs *crashFS) mutate(desc string, op func() error, torn func()) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.clone != nil {
		return fmt.Errorf("%s: %w", desc, errPowerLost)
	}
	fs.ops++
	if fs.ops != fs.crashAt {
		return op()
	}
	if torn != nil {
		torn()
	}
	fs.crashLocked(desc)
	return fmt.Errorf("%s: %w", desc, errPowerLost)
}

func (fs *crashFS) crashLocked(desc string) {
	fs.crashOp = desc
	fs.clone = fs.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: fs.unsyncedPct, RNG: fs.rng})
}

// crashNow loses power now unless it already has; it returns the disk that
// survived.
func (fs *crashFS) crashNow() *vfs.MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.clone == nil {
		fs.crashLocked("(after the workload)")
	}
	return fs.clone
}

func (fs *crashFS) opCount() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.ops
}

func (fs *crashFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, fs: fs, name: name}, nil
}

func (fs *crashFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.mutate("create "+name, func() (err error) { f, err = fs.mem.Create(name, c); return err }, nil)
	return fs.wrap(name, f, err)
}

func (fs *crashFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.mem.Open(name, opts...)
	return fs.wrap(name, f, err)
}

func (fs *crashFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	var f vfs.File
	err := fs.mutate("open-rw "+name, func() (err error) { f, err = fs.mem.OpenReadWrite(name, c, opts...); return err }, nil)
	return fs.wrap(name, f, err)
}

func (fs *crashFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.mem.OpenDir(name)
	return fs.wrap(name, f, err)
}

func (fs *crashFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.mutate("reuse "+name, func() (err error) { f, err = fs.mem.ReuseForWrite(old, name, c); return err }, nil)
	return fs.wrap(name, f, err)
}

func (fs *crashFS) Link(old, name string) error {
	return fs.mutate("link "+name, func() error { return fs.mem.Link(old, name) }, nil)
}

func (fs *crashFS) Remove(name string) error {
	return fs.mutate("remove "+name, func() error { return fs.mem.Remove(name) }, nil)
}

func (fs *crashFS) RemoveAll(name string) error {
	return fs.mutate("remove-all "+name, func() error { return fs.mem.RemoveAll(name) }, nil)
}

func (fs *crashFS) Rename(old, name string) error {
	return fs.mutate("rename "+old+" "+name, func() error { return fs.mem.Rename(old, name) }, nil)
}

func (fs *crashFS) MkdirAll(dir string, perm os.FileMode) error {
	return fs.mutate("mkdir "+dir, func() error { return fs.mem.MkdirAll(dir, perm) }, nil)
}

func (fs *crashFS) Lock(name string) (io.Closer, error) {
	var c io.Closer
	err := fs.mutate("lock "+name, func() (err error) { c, err = fs.mem.Lock(name); return err }, nil)
	return c, err
}

func (fs *crashFS) Unwrap() vfs.FS { return fs.mem }

type crashFile struct {
	vfs.File
	fs   *crashFS
	name string
}

func (f *crashFile) Write(p []byte) (int, error) {
	n := 0
	err := f.fs.mutate(fmt.Sprintf("write %s (%d bytes)", f.name, len(p)),
		func() (err error) { n, err = f.File.Write(p); return err },
		func() { f.File.Write(p[:f.fs.tornLen(len(p))]) })
	return n, err
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	n := 0
	err := f.fs.mutate(fmt.Sprintf("write %s (%d bytes at %d)", f.name, len(p), off),
		func() (err error) { n, err = f.File.WriteAt(p, off); return err },
		func() { f.File.WriteAt(p[:f.fs.tornLen(len(p))], off) })
	return n, err
}

func (f *crashFile) Sync() error {
	return f.fs.mutate("sync "+f.name, f.File.Sync, nil)
}

func (f *crashFile) SyncData() error {
	return f.fs.mutate("syncdata "+f.name, f.File.SyncData, nil)
}

func (f *crashFile) SyncTo(length int64) (bool, error) {
	full := false
	err := f.fs.mutate("syncto "+f.name, func() (err error) { full, err = f.File.SyncTo(length); return err }, nil)
	return full, err
}

// tornLen is how much of an n-byte write lands at the crash; the caller
// holds mu.
func (fs *crashFS) tornLen(n int) int {
	if n == 0 {
		return 0
	}
	return fs.rng.IntN(n)
}
