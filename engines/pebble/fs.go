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
//     rename, link, remove, mkdir): that error is kept, and every later
//     change is refused, so the disk stays as a crash at that moment would
//     have left it, which pebble's recovery handles. The engine reads the
//     kept error and refuses writes from then on: pebble reports a failed
//     background flush only to its event listener, and retries it forever.
//   - A failed directory sync is reported to pebble as a success. Pebble
//     panics on one (fsync errors are unrecoverable), in its own goroutines
//     too, which would end the process. That is safe only because of the
//     freeze: whatever pebble believes afterwards, nothing reaches the disk.
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
		if fs.failed.CompareAndSwap(nil, &err) {
			close(fs.failedCh)
		}
	}
	return err
}

func (fs *storeFS) Unwrap() vfs.FS { return fs.FS }

func (fs *storeFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.change("create", name, func() (err error) {
		f, err = fs.FS.Create(name, category)
		return err
	})
	if err != nil {
		return nil, err
	}
	dir := fs.FS.PathDir(name)
	if err := fs.change("sync dir", dir, func() error { return syncDir(fs.FS, dir) }); err != nil {
		f.Close()
		return nil, err
	}
	return &storeFile{File: f, fs: fs, name: name}, nil
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
	if err != nil {
		return nil, err
	}
	return &storeFile{File: f, fs: fs, name: newname}, nil
}

func (fs *storeFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return &storeFile{File: f, fs: fs, name: name}, nil
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

// storeFile is a file of a storeFS: its writes and syncs are changes.
type storeFile struct {
	vfs.File
	fs   *storeFS
	name string
	dir  bool
}

func (f *storeFile) Write(p []byte) (n int, err error) {
	err = f.fs.change("write", f.name, func() (err error) {
		n, err = f.File.Write(p)
		return err
	})
	return n, err
}

func (f *storeFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = f.fs.change("write", f.name, func() (err error) {
		n, err = f.File.WriteAt(p, off)
		return err
	})
	return n, err
}

func (f *storeFile) Sync() error {
	err := f.fs.change("sync", f.name, f.File.Sync)
	if f.dir {
		return nil // see storeFS: pebble panics on a failed directory sync
	}
	return err
}

func (f *storeFile) SyncData() error {
	return f.fs.change("sync", f.name, f.File.SyncData)
}

func (f *storeFile) SyncTo(length int64) (full bool, err error) {
	err = f.fs.change("sync", f.name, func() (err error) {
		full, err = f.File.SyncTo(length)
		return err
	})
	return full, err
}

func (f *storeFile) Preallocate(off, length int64) error {
	return f.fs.change("preallocate", f.name, func() error { return f.File.Preallocate(off, length) })
}
