package broker

import (
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncTimingFS is a vfs.FS that times every fsync of the files it opens. It
// changes nothing else: every other call goes to the wrapped FS.
type syncTimingFS struct {
	vfs.FS
	observe func(seconds float64)
	now     func() time.Time
}

func (fs *syncTimingFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &syncTimingFile{File: f, fs: fs}, nil
}

func (fs *syncTimingFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.Create(name, c))
}

func (fs *syncTimingFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, c, opts...))
}

func (fs *syncTimingFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname, c))
}

func (fs *syncTimingFS) OpenDir(name string) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenDir(name))
}

// Unwrap lets pebble's vfs.Root see the OS filesystem underneath.
func (fs *syncTimingFS) Unwrap() vfs.FS { return fs.FS }

type syncTimingFile struct {
	vfs.File
	fs *syncTimingFS
}

func (f *syncTimingFile) timed(start time.Time) {
	f.fs.observe(f.fs.now().Sub(start).Seconds())
}

func (f *syncTimingFile) Sync() error {
	defer f.timed(f.fs.now())
	return f.File.Sync()
}

func (f *syncTimingFile) SyncData() error {
	defer f.timed(f.fs.now())
	return f.File.SyncData()
}

func (f *syncTimingFile) SyncTo(length int64) (bool, error) {
	defer f.timed(f.fs.now())
	return f.File.SyncTo(length)
}
