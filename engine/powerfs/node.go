package powerfs

import (
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a loopback node whose operations fail after a power loss and
// whose file handles journal unsynced writes. Every operation the embedded
// LoopbackNode offers is overridden here or refused, so that nothing reaches
// the backing directory unjournaled.
type node struct {
	*fs.LoopbackNode
	m *FS
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
	_ fs.NodeTmpfiler       = (*node)(nil)
)

// WrapChild makes every node of the tree a powerfs node.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), m: n.m}
}

// backingPath is the node's file in the backing directory.
func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

// relPath is the node's path relative to the root.
func (n *node) relPath() string { return n.Path(n.Root()) }

// created notes that name was created in n: durable at n's fsync. It
// returns EIO if the note cannot be made (the name is then durable at once
// and the caller must not pretend otherwise).
func (n *node) created(name string) syscall.Errno {
	return fs.ToErrno(n.m.namedLocked(undoCreate(filepath.Join(n.relPath(), name)), n.backingPath()))
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.m.alive(); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Lookup(ctx, name, out)
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := n.m.alive(); errno != 0 {
		return errno
	}
	if pf, ok := f.(*file); ok {
		return pf.lf.Getattr(ctx, out)
	}
	return n.LoopbackNode.Getattr(ctx, nil, out)
}

func (n *node) Statx(ctx context.Context, f fs.FileHandle, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	if errno := n.m.alive(); errno != 0 {
		return errno
	}
	if pf, ok := f.(*file); ok {
		f = pf.lf
	}
	return n.LoopbackNode.Statx(ctx, f, flags, mask, out)
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if errno := n.m.alive(); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Readdir(ctx)
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.m.alive(); errno != 0 {
		return nil, 0, errno
	}
	ds, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dirHandle{n: n, ds: ds}, fuseFlags, 0
}

// dirHandle is an open directory whose fsync makes the names created in it
// durable.
type dirHandle struct {
	n  *node
	ds fs.FileHandle // go-fuse's loopback directory stream
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileReleasedirer = (*dirHandle)(nil)
	_ fs.FileFsyncdirer   = (*dirHandle)(nil)
)

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if errno := d.n.m.alive(); errno != 0 {
		return nil, errno
	}
	return d.ds.(fs.FileReaddirenter).Readdirent(ctx)
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if errno := d.n.m.alive(); errno != 0 {
		return errno
	}
	return d.ds.(fs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	d.ds.(fs.FileReleasedirer).Releasedir(ctx, flags)
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	end, errno := d.n.m.begin()
	if errno != 0 {
		return errno
	}
	defer end()
	return fs.ToErrno(d.n.m.dirSyncedLocked(d.n.backingPath()))
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	if errno := n.m.alive(); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Readlink(ctx)
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	if errno := n.m.alive(); errno != 0 {
		return errno
	}
	return n.LoopbackNode.Statfs(ctx, out)
}

// Open opens the backing file; O_TRUNC is taken out of the open and done
// as a journaled truncation, so that it too is undone at a power loss.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.m.alive(); errno != 0 {
		return nil, 0, errno
	}
	trunc := flags&syscall.O_TRUNC != 0
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags&^syscall.O_TRUNC)
	if errno != 0 {
		return nil, 0, errno
	}
	f := newFile(n.m, fh)
	if trunc {
		if errno := f.truncate(0); errno != 0 {
			f.Release(ctx)
			return nil, 0, errno
		}
	}
	return f, fuseFlags, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	end, errno := n.m.begin()
	if errno != 0 {
		return nil, nil, 0, errno
	}
	defer end()
	// A file that exists already is opened by Open, not Create, so O_TRUNC
	// here has nothing to cut.
	in, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	f := newFile(n.m, fh)
	if errno := n.created(name); errno != 0 {
		f.Release(ctx)
		return nil, nil, 0, errno
	}
	return in, f, fuseFlags, 0
}

// Setattr journals a change of size; the other attributes (mode, owner,
// times) are metadata, applied at once.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := n.m.alive(); errno != 0 {
		return errno
	}
	pf, _ := f.(*file)
	if size, ok := in.GetSize(); ok {
		if pf == nil {
			// truncate(2) by path: open a handle of our own to journal it.
			of, err := os.OpenFile(n.backingPath(), os.O_RDWR, 0)
			if err != nil {
				return fs.ToErrno(err)
			}
			pf = newFile(n.m, fs.NewLoopbackFileFromOS(of))
			defer pf.Release(ctx)
		}
		if errno := pf.truncate(int64(size)); errno != 0 {
			return errno
		}
		rest := *in
		rest.Valid &^= fuse.FATTR_SIZE
		in = &rest
	}
	if ff, ok := f.(*file); ok {
		f = ff.lf
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	end, errno := n.m.begin()
	if errno != 0 {
		return nil, errno
	}
	defer end()
	in, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		errno = n.created(name)
	}
	return in, errno
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	end, errno := n.m.begin()
	if errno != 0 {
		return nil, errno
	}
	defer end()
	in, errno := n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	if errno == 0 {
		errno = n.created(name)
	}
	return in, errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	end, errno := n.m.begin()
	if errno != 0 {
		return errno
	}
	defer end()
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	end, errno := n.m.begin()
	if errno != 0 {
		return errno
	}
	defer end()
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	end, errno := n.m.begin()
	if errno != 0 {
		return errno
	}
	defer end()
	p, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	// A rename onto a free name is durable once both directories are
	// fsynced; one that replaces a file (or exchanges two) is durable at
	// once, since undoing it would need the replaced file back.
	target := filepath.Join(p.backingPath(), newName)
	_, err := os.Lstat(target)
	undoable := flags == 0 && errors.Is(err, iofs.ErrNotExist)
	if errno := n.LoopbackNode.Rename(ctx, name, p.LoopbackNode, newName, flags); errno != 0 {
		return errno
	}
	if !undoable {
		return 0
	}
	undo := undoRename(filepath.Join(n.relPath(), name), filepath.Join(p.relPath(), newName))
	return fs.ToErrno(n.m.namedLocked(undo, n.backingPath(), p.backingPath()))
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	end, errno := n.m.begin()
	if errno != 0 {
		return nil, errno
	}
	defer end()
	if t, ok := target.(*node); ok {
		target = t.LoopbackNode
	}
	in, errno := n.LoopbackNode.Link(ctx, target, name, out)
	if errno == 0 {
		errno = n.created(name)
	}
	return in, errno
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	end, errno := n.m.begin()
	if errno != 0 {
		return nil, errno
	}
	defer end()
	in, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	if errno == 0 {
		errno = n.created(name)
	}
	return in, errno
}

// CopyFileRange is refused: the kernel falls back to reads and writes,
// which are journaled.
func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle, offOut uint64, length uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.EOPNOTSUPP
}

// Tmpfile (O_TMPFILE) is refused: an anonymous file is not in the tree, so
// a rollback could not find it.
func (n *node) Tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}
