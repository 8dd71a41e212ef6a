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

// storeFS is the filesystem pebble sees: the engine's Options.FS, changed
// where pebble does not survive a crashing or failing disk.
//
//   - Creating a file syncs its directory before the file is used: pebble
//     syncs the directory once, after the marker that names a new
//     MANIFEST, and a filesystem that persists entries in any order could
//     keep the marker and lose the MANIFEST.
//   - The first failed change (or failed Stat of a WAL) freezes the disk:
//     the error is kept and every later change refused, so the disk stays
//     as a crash at that moment would have left it. The engine reads the
//     kept error after every pebble call and acknowledges nothing from
//     then on (pebble only logs a failed background flush, and retries it
//     forever).
//   - Failures pebble cannot take (it panics, some with its mutexes in a
//     state no recover repairs) are reported to it as successes: a failed
//     directory sync, any failed change to a WAL, a failed Close after the
//     freeze; a WAL that cannot be created is a voidFile. Safe only because
//     of the freeze and the engine's check above.
//   - While pebble.Open runs, the first failure abandons the store: every
//     change from then on succeeds without reaching the disk, so that
//     Open, which is not safe to fail half way (it can spin forever or
//     leave goroutines behind), runs to its end; openStore has returned
//     the failure already and closes the DB it gets.
type storeFS struct {
	vfs.FS

	failed    atomic.Pointer[error]
	failedCh  chan struct{} // closed when failed is set
	abandoned atomic.Bool

	mu      sync.Mutex // orders fail and endOpening
	opening bool       // pebble.Open is running: a failure abandons the store
}

func newStoreFS(fs vfs.FS) *storeFS {
	return &storeFS{FS: fs, failedCh: make(chan struct{})}
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

// change runs op, which changes the disk, unless the disk froze; its error
// freezes the disk. Once the store is abandoned, op does not run and change
// returns nil, and so it does for the failure that abandons it: callers make
// up op's results (a voidFile, all bytes written, a full sync).
func (fs *storeFS) change(what, name string, op func() error) error {
	if fs.abandoned.Load() {
		return nil
	}
	if err := fs.err(); err != nil {
		return fmt.Errorf("%s %s: %w: %w", what, name, errFrozen, err)
	}
	err := op()
	if err != nil {
		err = fmt.Errorf("%s %s: %w", what, name, err)
		fs.fail(err)
		if fs.abandoned.Load() {
			return nil
		}
	}
	return err
}

// fail freezes the disk at err, unless it froze already; while pebble.Open
// runs, it abandons the store too (first, so that no change between the two
// is refused).
func (fs *storeFS) fail(err error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.opening {
		fs.abandoned.Store(true)
	}
	if fs.failed.CompareAndSwap(nil, &err) {
		close(fs.failedCh)
	}
}

// startOpening says pebble.Open is about to run.
func (fs *storeFS) startOpening() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.opening = true
}

// endOpening says pebble.Open returned; it returns the failure that
// abandoned the store meanwhile, if any. From then on a failure freezes the
// disk without abandoning the store.
func (fs *storeFS) endOpening() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.opening = false
	return fs.err()
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
		return voidFile{}, nil // see storeFS: pebble panics if it cannot rotate its WAL
	case err != nil:
		return nil, err
	case f == nil:
		return voidFile{}, nil // abandoned
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
		return voidFile{}, nil // see Create
	case err != nil:
		return nil, err
	case f == nil:
		return voidFile{}, nil // abandoned
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

// List of an abandoned store does not fail: it lists nothing instead. The
// last thing pebble.Open does before it returns is list the store to delete
// obsolete files, and if that fails (a disk whose reads fail too) it returns
// the error with its background goroutines already started, on a DB that
// nobody can close: they would run, one of them in a tight loop, for the
// life of the process. Listing nothing, pebble finds nothing obsolete, and
// deletes nothing, which an abandoned store would not do anyway.
func (fs *storeFS) List(dir string) ([]string, error) {
	names, err := fs.FS.List(dir)
	if err != nil && fs.abandoned.Load() {
		return nil, nil
	}
	return names, err
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

func (f *storeFile) Write(p []byte) (int, error) {
	err := f.fs.change("write", f.name, func() error {
		_, err := f.File.Write(p)
		return err
	})
	if err = f.hide(err); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (f *storeFile) WriteAt(p []byte, off int64) (int, error) {
	err := f.fs.change("write", f.name, func() error {
		_, err := f.File.WriteAt(p, off)
		return err
	})
	if err = f.hide(err); err != nil {
		return 0, err
	}
	return len(p), nil
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

func (f *storeFile) SyncTo(length int64) (bool, error) {
	full := true // when op does not run
	err := f.fs.change("sync", f.name, func() (err error) {
		full, err = f.File.SyncTo(length)
		return err
	})
	switch {
	case err == nil:
		return full, nil
	case f.wal:
		return true, nil
	}
	return false, err
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
		return voidFile{}.Stat()
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
	if frozen || f.fs.abandoned.Load() {
		return nil
	}
	return f.hide(err)
}
