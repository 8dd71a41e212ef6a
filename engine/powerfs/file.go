package powerfs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// file is an open backing file whose writes, truncations and fsyncs go
// through the mount's journal. It holds the LoopbackFile by name rather
// than embedding it: a LoopbackFile offers passthrough (the kernel would
// then write the backing file directly, unjournaled), vectored writes and
// fallocate, none of which may bypass the journal.
type file struct {
	m  *FS
	lf *fs.LoopbackFile
	fd int
}

var (
	_ fs.FileReader    = (*file)(nil)
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileFsyncer   = (*file)(nil)
	_ fs.FileFlusher   = (*file)(nil)
	_ fs.FileReleaser  = (*file)(nil)
	_ fs.FileGetattrer = (*file)(nil)
	_ fs.FileSetattrer = (*file)(nil)
	_ fs.FileLseeker   = (*file)(nil)
	_ fs.FileAllocater = (*file)(nil)
)

func newFile(m *FS, fh fs.FileHandle) *file {
	lf := fh.(*fs.LoopbackFile)
	// The descriptor stays open until Release; PassthroughFd is only how
	// LoopbackFile lends it.
	fd, _ := lf.PassthroughFd()
	return &file{m: m, lf: lf, fd: fd}
}

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if errno := f.m.alive(); errno != 0 {
		return nil, errno
	}
	n, err := unix.Pread(f.fd, buf, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(buf[:n]), 0
}

// Write journals what the write replaces, then writes.
func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	end, errno := f.m.begin()
	if errno != 0 {
		return 0, errno
	}
	defer end()
	u, err := recordWrite(f.fd, off, len(data))
	if err == nil {
		err = f.m.noteLocked(f.fd, u)
	}
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	n, err := unix.Pwrite(f.fd, data, off)
	return uint32(n), fs.ToErrno(err)
}

// truncate journals the size it replaces, then sets the size.
func (f *file) truncate(size int64) syscall.Errno {
	end, errno := f.m.begin()
	if errno != 0 {
		return errno
	}
	defer end()
	u, err := recordTruncate(f.fd, size)
	if err == nil {
		err = f.m.noteLocked(f.fd, u)
	}
	if err == nil {
		err = unix.Ftruncate(f.fd, size)
	}
	return fs.ToErrno(err)
}

// Fsync (and fdatasync: the flags do not matter, size is data here) makes
// every change to the file durable, through whichever handle it was made.
func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	end, errno := f.m.begin()
	if errno != 0 {
		return errno
	}
	defer end()
	return fs.ToErrno(f.m.syncedLocked(f.fd))
}

// Flush (a close of a descriptor) makes nothing durable.
func (f *file) Flush(ctx context.Context) syscall.Errno {
	if errno := f.m.alive(); errno != 0 {
		return errno
	}
	return f.lf.Flush(ctx)
}

// Release closes the backing descriptor, power or not.
func (f *file) Release(ctx context.Context) syscall.Errno {
	return f.lf.Release(ctx)
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	if errno := f.m.alive(); errno != 0 {
		return errno
	}
	return f.lf.Getattr(ctx, out)
}

// Setattr is reached only through the node's Setattr, which journals a
// change of size first; this handles the rest.
func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := f.m.alive(); errno != 0 {
		return errno
	}
	if size, ok := in.GetSize(); ok {
		if errno := f.truncate(int64(size)); errno != 0 {
			return errno
		}
		rest := *in
		rest.Valid &^= fuse.FATTR_SIZE
		in = &rest
	}
	return f.lf.Setattr(ctx, in, out)
}

func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	if errno := f.m.alive(); errno != 0 {
		return 0, errno
	}
	return f.lf.Lseek(ctx, off, whence)
}

// Allocate is refused: callers fall back to writing, which is journaled.
func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	return syscall.EOPNOTSUPP
}
