package pebble

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// storeFS is the filesystem pebble sees: the engine's Options.FS with changes
// for the ways pebble behaves under a crashing or failing disk.
//
//   - Creating a file syncs its directory before the file is used. Pebble
//     creates a new MANIFEST, then a marker file naming it, and syncs the
//     directory once, after the marker. A filesystem that persists directory
//     entries in any order (pebble's crashable MemFS models one; ext4 and XFS
//     happen to keep them in order) may keep the marker and lose the
//     MANIFEST, and the store no longer opens. One more directory sync per
//     created file (WAL, sstable, MANIFEST, marker) closes that gap.
//   - The disk freezes at the first failed change (write, sync, create,
//     rename, link, remove, mkdir, and a failed close), or the first failed
//     Stat of a WAL: that error is kept, and every later change is refused,
//     so the disk stays as a crash at that moment would have left it, which
//     pebble's recovery handles. The engine reads the kept error after every
//     pebble call and refuses writes from then on: pebble reports a failed
//     background flush only to its event listener, and retries it forever.
//   - Some failures pebble cannot take: it panics, in its own goroutines
//     too, or with its own mutexes in a state a recover cannot repair
//     (rotating the WAL, it panics with DB.mu released under a deferred
//     unlock, and the runtime then dies of "unlock of unlocked mutex"). So
//     pebble never sees those failures: a failed directory sync, any failed
//     change to a WAL (create, reuse, write, sync, preallocate, close, a
//     failed Stat), and a failed Close of any file after the freeze are
//     reported to pebble as successes; a WAL that cannot be created is a
//     walVoid that takes every write and keeps none. Pebble then goes on
//     believing its WAL holds what it wrote. That is safe only because of the
//     freeze and the engine's check: the failure froze the disk before pebble
//     saw the success, so nothing pebble does afterwards reaches the disk
//     (which keeps what a crash at the failure would have kept), and the
//     engine, which reads the kept error after every call into pebble,
//     acknowledges nothing from then on: a Sync whose WAL sync failed returns
//     the error, though pebble said the sync succeeded.
//   - fence parks every later change, for good. Open uses it to abandon a
//     pebble.Open that cannot finish: when every write fails, pebble retries
//     the flush of a recovered WAL in a tight loop and its Open never
//     returns. Parked, the abandoned DB costs memory but no CPU.
type storeFS struct {
	vfs.FS

	failed    atomic.Pointer[error]
	failedCh  chan struct{} // closed when failed is set
	fenceOnce sync.Once
	fenced    chan struct{}
}

func newStoreFS(fs vfs.FS) *storeFS {
	return &storeFS{FS: fs, failedCh: make(chan struct{}), fenced: make(chan struct{})}
}

// errFrozen wraps the first failure in the refusals that follow it.
var errFrozen = errors.New("the disk failed earlier; no more changes")

// err returns the first failed change, or nil.
func (fs *storeFS) err() error {
	if p := fs.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fence parks every later change, for good.
func (fs *storeFS) fence() { fs.fenceOnce.Do(func() { close(fs.fenced) }) }

// change runs op, which changes the disk, unless the disk froze; its error
// freezes the disk.
func (fs *storeFS) change(what, name string, op func() error) error {
	select {
	case <-fs.fenced:
		select {} // abandoned: see storeFS
	default:
	}
	if err := fs.err(); err != nil {
		return fmt.Errorf("%s %s: %w: %w", what, name, errFrozen, err)
	}
	err := op()
	if err != nil {
		err = fmt.Errorf("%s %s: %w", what, name, err)
		fs.fail(err)
	}
	return err
}

// fail freezes the disk at err, a failure seen outside change (a failed
// close or Stat), unless it froze already.
func (fs *storeFS) fail(err error) {
	if fs.failed.CompareAndSwap(nil, &err) {
		close(fs.failedCh)
	}
}

func (fs *storeFS) Unwrap() vfs.FS { return fs.FS }

func (fs *storeFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	wal := isWAL(fs.FS, name)
	var f vfs.File
	err := fs.change("create", name, func() (err error) {
		f, err = fs.FS.Create(name, category)
		return err
	})
	switch {
	case err != nil && wal:
		return walVoid{}, nil // see storeFS: pebble panics if it cannot rotate its WAL
	case err != nil:
		return nil, err
	}
	dir := fs.FS.PathDir(name)
	if err := fs.change("sync dir", dir, func() error { return syncDir(fs.FS, dir) }); err != nil && !wal {
		f.Close()
		return nil, err
	}
	return &storeFile{File: f, fs: fs, name: name, wal: wal}, nil
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (fs *storeFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.change("reuse", newname, func() (err error) {
		f, err = fs.FS.ReuseForWrite(oldname, newname, category)
		return err
	})
	wal := isWAL(fs.FS, newname)
	switch {
	case err != nil && wal:
		return walVoid{}, nil // see Create
	case err != nil:
		return nil, err
	}
	return &storeFile{File: f, fs: fs, name: newname, wal: wal}, nil
}

func (fs *storeFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return &storeFile{File: f, fs: fs, name: name, wal: isWAL(fs.FS, name)}, nil
}

func (fs *storeFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &storeFile{File: f, fs: fs, name: name, dir: true}, nil
}

func (fs *storeFS) Link(oldname, newname string) error {
	return fs.change("link", newname, func() error { return fs.FS.Link(oldname, newname) })
}

func (fs *storeFS) Rename(oldname, newname string) error {
	return fs.change("rename", newname, func() error { return fs.FS.Rename(oldname, newname) })
}

func (fs *storeFS) MkdirAll(dir string, perm os.FileMode) error {
	return fs.change("mkdir", dir, func() error { return fs.FS.MkdirAll(dir, perm) })
}

func (fs *storeFS) Remove(name string) error {
	var missing error
	err := fs.change("remove", name, func() error {
		err := fs.FS.Remove(name)
		if oserror.IsNotExist(err) {
			missing = err // pebble removes what may be gone: not a failure
			return nil
		}
		return err
	})
	if err == nil {
		err = missing
	}
	return err
}

func (fs *storeFS) RemoveAll(name string) error {
	return fs.change("remove", name, func() error { return fs.FS.RemoveAll(name) })
}

// storeFile is a file of a storeFS: its writes and syncs are changes. A
// WAL's failures are reported to pebble as successes (see storeFS).
type storeFile struct {
	vfs.File
	fs   *storeFS
	name string
	dir  bool
	wal  bool
}

// hide is what the file reports to pebble for err: nothing, for a WAL.
func (f *storeFile) hide(err error) error {
	if f.wal {
		return nil
	}
	return err
}

func (f *storeFile) Write(p []byte) (n int, err error) {
	err = f.fs.change("write", f.name, func() (err error) {
		n, err = f.File.Write(p)
		return err
	})
	if err != nil && f.wal {
		return len(p), nil
	}
	return n, err
}

func (f *storeFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = f.fs.change("write", f.name, func() (err error) {
		n, err = f.File.WriteAt(p, off)
		return err
	})
	if err != nil && f.wal {
		return len(p), nil
	}
	return n, err
}

func (f *storeFile) Sync() error {
	err := f.fs.change("sync", f.name, f.File.Sync)
	if f.dir {
		return nil // see storeFS: pebble panics on a failed directory sync
	}
	return f.hide(err)
}

func (f *storeFile) SyncData() error {
	return f.hide(f.fs.change("sync", f.name, f.File.SyncData))
}

func (f *storeFile) SyncTo(length int64) (full bool, err error) {
	err = f.fs.change("sync", f.name, func() (err error) {
		full, err = f.File.SyncTo(length)
		return err
	})
	if err != nil && f.wal {
		return true, nil
	}
	return full, err
}

func (f *storeFile) Preallocate(off, length int64) error {
	return f.hide(f.fs.change("preallocate", f.name, func() error { return f.File.Preallocate(off, length) }))
}

// Stat of a WAL cannot fail either: pebble stats a recycled WAL while it
// rotates to it, and panics on an error. A WAL it cannot stat freezes the
// disk, and pebble is told it is empty.
func (f *storeFile) Stat() (vfs.FileInfo, error) {
	info, err := f.File.Stat()
	if err != nil && f.wal {
		f.fs.fail(fmt.Errorf("stat %s: %w", f.name, err))
		return walVoid{}.Stat()
	}
	return info, err
}

// Close releases the file whatever happens. A failed close may mean written
// data never reached the disk, so it freezes the disk; pebble hears of it
// only if it is the first failure and the file is not a WAL (after the
// freeze nothing reaches the disk anyway).
func (f *storeFile) Close() error {
	frozen := f.fs.err() != nil
	err := f.File.Close()
	if err == nil {
		return nil
	}
	err = fmt.Errorf("close %s: %w", f.name, err)
	f.fs.fail(err)
	if frozen {
		return nil
	}
	return f.hide(err)
}
