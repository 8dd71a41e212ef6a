// Package powerfs is a FUSE filesystem that can lose power: a loopback over
// a backing directory, mounted at a mount point, that models a disk's write
// cache, for engines that do their own file I/O and cannot run on
// crashtest's in-memory filesystem (badger).
//
//	m, err := powerfs.Mount(backing, mnt, powerfs.Options{CrashAtOp: k})
//	if errors.Is(err, powerfs.ErrUnavailable) {
//		t.Skip(err)
//	}
//	defer m.Unmount()
//	// ... a process writes under mnt, then:
//	m.PowerLoss()
//	// backing now holds what survived; every operation on mnt fails with EIO.
//
// # The model
//
// Writes reach the backing file at once, so every read through the mount
// sees them, but the filesystem remembers, per file, what each write not
// yet made durable replaced (the bytes it overwrote and the size before it).
// An fsync or fdatasync of the file, through any of its handles, makes all of
// them durable and forgets them. A change of size (ftruncate, truncate,
// open with O_TRUNC) is data in this model: it too is undone at a power loss
// unless the file was fsynced after it. Writes through a shared mmap count
// when the kernel writes the dirty pages back to the filesystem (at msync,
// fsync, or its own writeback); a page still dirty in the kernel at the
// power loss never reached the disk at all.
//
// At PowerLoss (or before the CrashAtOp-th operation that changes the disk)
// every file is rolled back to its last synced state, keeping only the
// oldest Keep percent of its unsynced changes (a disk writing its cache in
// order, per file), the names no directory fsync made durable are undone
// (see below), and from then on every operation on the mount fails with
// EIO: the process sees its disk vanish. The operation that hit the crash
// point does not happen.
//
// A name is durable once its directory is fsynced: a create, mkdir,
// mknod, symlink or link, and a rename onto a free name, are made in the
// backing directory at once (so the process sees them), and undone at a
// power loss unless the directory holding the new name (for a rename, both
// directories) was fsynced after them; an undone mkdir takes everything
// under it along, since none of it was reachable. A file's own fsync does
// not make its name durable (POSIX promises no more; ext4 and XFS usually
// give more). Removing a name is durable at once: an unlink, an rmdir,
// and a rename that replaces an existing file or exchanges two (undoing
// those would need the removed file back). So the model finds an engine
// that forgets to fsync a directory after creating a file in it, but not
// one that counts on an unlink or a replacing rename being durable
// without a directory fsync.
// Changes of mode, owner and times are applied at once and never undone.
// Options.JournaledNames relaxes this to what ext4 and XFS do: any fsync
// commits every earlier change to names.
//
// It does not model torn sectors inside one write, writes reordered within
// one file, or a disk that lies about fsync (but see IgnoreFsync, which is
// such a disk, for showing a test can fail).
//
// # Where the server runs
//
// The server runs in the calling process. A process that both serves a
// FUSE mount and uses it can deadlock (go-fuse's documentation lists the
// cases): an mmap page fault blocks its thread outside any system call, and
// if the Go runtime stops the world for a collection meanwhile, the
// goroutine that would answer the fault never runs. Engines that mmap their
// files (badger does) must therefore run in another process, which is also
// the honest shape of the model: at a power loss that process is killed,
// and the log is recovered from the backing directory. Plain reads and
// writes through the mount from the serving process are safe (powerfs's own
// tests do that).
package powerfs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ErrUnavailable is returned by Mount when this machine cannot mount a FUSE
// filesystem (no /dev/fuse, not root, the mount refused): a test should
// skip, with the error as its reason.
var ErrUnavailable = errors.New("powerfs: FUSE is not available")

// Options configure a mount.
type Options struct {
	// CrashAtOp, if positive, loses power just before the CrashAtOp-th
	// operation that changes the disk (a write, a change of size, an fsync
	// of a file or a directory, a create, mkdir, mknod, rename, link,
	// symlink, unlink or rmdir): it fails with EIO, as does everything
	// after it.
	CrashAtOp int
	// Keep is the percentage of each file's unsynced changes, and of the
	// unsynced changes to names, that survive a power loss, the oldest
	// first: 0 keeps exactly what was synced, 100 everything written.
	// Negative: a prefix of random length for each, drawn from Seed.
	Keep int
	// Seed seeds the random choices of a power loss.
	Seed uint64
	// JournaledNames makes an fsync of any file or directory also make
	// durable every change to names made before it, as on a journaling
	// filesystem (ext4, XFS), where that fsync commits the journal those
	// changes are in. Off, the model is POSIX's: only the directory's own
	// fsync does.
	JournaledNames bool
	// IgnoreFsync makes fsync (of files and directories) succeed without
	// making anything durable: a disk that lies. Only for showing that a power-loss test fails when
	// synced data is lost.
	IgnoreFsync bool
}

// FS is a mounted powerfs.
type FS struct {
	backing string
	opts    Options
	server  *fuse.Server

	mu       sync.Mutex
	ops      int // operations that changed the disk, counted by begin
	lost     bool
	journals map[fileID]journal
	names    []nameUndo // oldest first
	lostCh   chan struct{}
	lossErr  error // a rollback that failed
}

// Mount serves a powerfs over the directory backing at mnt (which must
// exist) until Unmount.
func Mount(backing, mnt string, opts Options) (*FS, error) {
	if err := available(); err != nil {
		return nil, err
	}
	m := &FS{backing: backing, opts: opts, journals: map[fileID]journal{}, lostCh: make(chan struct{})}
	lr, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, fmt.Errorf("powerfs: backing %s: %w", backing, err)
	}
	root := &node{LoopbackNode: lr.(*fs.LoopbackNode), m: m}
	lr.(*fs.LoopbackNode).RootData.RootNode = root
	server, err := fs.Mount(mnt, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:        "powerfs",
			Name:          "powerfs",
			DirectMount:   true,
			DisableXAttrs: true,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: mount %s: %w", ErrUnavailable, mnt, err)
	}
	if err := server.WaitMount(); err != nil {
		_ = server.Unmount()
		return nil, fmt.Errorf("%w: mount %s: %w", ErrUnavailable, mnt, err)
	}
	m.server = server
	return m, nil
}

func available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root", ErrUnavailable)
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return f.Close()
}

// Unmount stops serving and unmounts. Whatever was not synced stays in the
// backing directory unless PowerLoss ran first: an unmount is a clean
// shutdown.
func (m *FS) Unmount() error {
	if m.server == nil {
		return nil
	}
	err := m.server.Unmount()
	if err == nil {
		m.server.Wait()
		m.server = nil
	}
	return err
}

// PowerLoss cuts the power now, if it is not cut already: every file is
// rolled back to its last synced state (less what Options.Keep keeps) and
// every later operation on the mount fails with EIO. An operation in flight
// finishes first, or fails. It returns an error only if the rollback
// itself failed (the backing directory is then not a crash state).
func (m *FS) PowerLoss() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loseLocked()
	return m.lossErr
}

// Lost is closed when the power goes out.
func (m *FS) Lost() <-chan struct{} { return m.lostCh }

// Ops is how many operations that change the disk the mount has seen
// (after a power loss, those up to and including the one that hit it).
func (m *FS) Ops() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

func (m *FS) loseLocked() {
	if m.lost {
		return
	}
	m.lost = true
	rng := rand.New(rand.NewPCG(m.opts.Seed, 0x706f776572))
	keep := keepShare(m.opts.Keep, rng)
	// Names first: a file whose creation is lost needs no rollback, and a
	// file moved back is found where it was.
	m.lossErr = unname(m.backing, m.names[keep(len(m.names)):])
	if m.lossErr == nil {
		m.lossErr = rollback(m.backing, m.journals, keep)
	}
	m.journals, m.names = nil, nil
	close(m.lostCh)
}

// begin starts an operation that changes the disk: it counts it, cuts the
// power if it is the crash point, and holds the mount's lock until the
// returned function is called (operations are serialized, so a power loss
// never sees one half done). After a power loss it returns EIO.
func (m *FS) begin() (end func(), errno syscall.Errno) {
	m.mu.Lock()
	if !m.lost {
		m.ops++
		if m.ops == m.opts.CrashAtOp {
			m.loseLocked()
		}
	}
	if m.lost {
		m.mu.Unlock()
		return nil, syscall.EIO
	}
	return m.mu.Unlock, 0
}

// alive is for operations that change nothing: EIO after a power loss.
func (m *FS) alive() syscall.Errno {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lost {
		return syscall.EIO
	}
	return 0
}

// noteLocked adds u to the journal of the file open as fd. The caller holds
// m.mu (begin).
func (m *FS) noteLocked(fd int, u undo) error {
	id, err := idOf(fd)
	if err != nil {
		return err
	}
	m.journals[id] = append(m.journals[id], u)
	return nil
}

// syncedLocked makes every change to the file open as fd durable.
func (m *FS) syncedLocked(fd int) error {
	if m.opts.IgnoreFsync {
		return nil
	}
	id, err := idOf(fd)
	if err != nil {
		return err
	}
	delete(m.journals, id)
	if m.opts.JournaledNames {
		m.names = nil
	}
	return nil
}

// namedLocked notes a change to the namespace that undo reverts, durable
// once each of dirs (backing paths) has been fsynced.
func (m *FS) namedLocked(undo func(string) error, dirs ...string) error {
	u := nameUndo{dirs: map[fileID]bool{}, undo: undo}
	for _, d := range dirs {
		id, err := idOfPath(d)
		if err != nil {
			return err
		}
		u.dirs[id] = true
	}
	m.names = append(m.names, u)
	return nil
}

// dirSyncedLocked makes durable every change to the namespace waiting
// for the directory at path (a backing path).
func (m *FS) dirSyncedLocked(path string) error {
	if m.opts.IgnoreFsync {
		return nil
	}
	if m.opts.JournaledNames {
		m.names = nil
		return nil
	}
	id, err := idOfPath(path)
	if err != nil {
		return err
	}
	kept := m.names[:0]
	for _, u := range m.names {
		delete(u.dirs, id)
		if len(u.dirs) > 0 {
			kept = append(kept, u)
		}
	}
	m.names = kept
	return nil
}
