package partition

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"

	"github.com/minikafka/minikafka/clock"
)

// The data of a removed partition is deleted in the background, at a
// bounded rate, a file at a time and each large file from its end a step at
// a time. Unlinking a large file frees all its extents in one journal
// transaction (and, on a filesystem mounted with discard, trims them), and
// every fsync of every partition on the disk waits behind it; shrunk step
// by step, with a pause after each, the deletion leaves the fsyncs alone.
// RocksDB's DeleteScheduler and pebble's TargetByteDeletionRate pace
// deletions for the same reason.
const (
	// DefaultDeleteRate is Config.DeleteRate's default, in bytes per second.
	DefaultDeleteRate = 512 << 20
	// deleteStep is how much of a file one truncation frees.
	deleteStep = 16 << 20
)

// errStopped ends a deletion cut short by Close; the next open finishes it.
var errStopped = errors.New("partition: deleter stopped")

// deleter removes directories that have been renamed aside (a name ending
// in deletingSuffix, which an open removes if a crash or a Close comes
// first), and the files engines hand it (engine.Options.Discard: a segment
// that retention dropped, renamed aside by the engine). In Manual mode it
// removes each at once, on the caller's goroutine, so that the simulator
// sees every I/O in order.
type deleter struct {
	fs     vfs.FS
	clock  clock.Clock
	logger *slog.Logger
	rate   int64 // bytes per second; <= 0 does not pace
	manual bool
	quit   <-chan struct{}
	done   chan struct{} // closed when run has returned

	mu      sync.Mutex
	pending []string
	wake    chan struct{} // capacity 1: a removal queued since run last looked
}

func newDeleter(fs vfs.FS, c clock.Clock, logger *slog.Logger, rate int64, manual bool, quit <-chan struct{}) *deleter {
	d := &deleter{fs: fs, clock: c, logger: logger, rate: rate, manual: manual, quit: quit,
		done: make(chan struct{}), wake: make(chan struct{}, 1)}
	if manual {
		close(d.done)
	} else {
		go d.run()
	}
	return d
}

// remove deletes path, a directory or a file, now in Manual mode and
// otherwise in the background.
func (d *deleter) remove(path string) {
	if d.manual {
		d.removeAll(path)
		return
	}
	d.mu.Lock()
	d.pending = append(d.pending, path)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *deleter) run() {
	defer close(d.done)
	for {
		select {
		case <-d.quit:
			return // what is left stays renamed aside: the next open removes it
		default:
		}
		d.mu.Lock()
		var dir string
		if len(d.pending) > 0 {
			dir, d.pending = d.pending[0], d.pending[1:]
		}
		d.mu.Unlock()
		if dir == "" {
			select {
			case <-d.quit:
				return
			case <-d.wake:
			}
			continue
		}
		if err := d.removePath(dir); errors.Is(err, errStopped) {
			return
		} else if err != nil {
		}
	}
}

func (d *deleter) removeAll(dir string) {
	if err := d.fs.RemoveAll(dir); err != nil {
		d.logger.Warn("removing a partition directory failed; the next open retries", "dir", dir, "err", err)
	}
}

// removePath deletes path, a directory (removeTree) or a file; one that is
// gone already is done.
func (d *deleter) removePath(path string) error {
	st, err := d.fs.Stat(path)
	switch {
	case oserror.IsNotExist(err):
		return nil
	case err != nil:
		return err
	case st.IsDir():
		return d.removeTree(path)
	}
	return d.removeFile(path, st.Size())
}

// removeTree deletes the files under dir one by one, shrinking each large
// one first, then dir itself.
func (d *deleter) removeTree(dir string) error {
	names, err := d.fs.List(dir)
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		path := d.fs.PathJoin(dir, name)
		st, err := d.fs.Stat(path)
		if err != nil {
			return err
		}
		if st.IsDir() {
			err = d.removeTree(path)
		} else {
			err = d.removeFile(path, st.Size())
		}
		if err != nil {
			return err
		}
	}
	return d.fs.RemoveAll(dir)
}

// removeFile truncates path from its end a step at a time, pausing after
// each for the rate, then removes it and pauses for what was left.
func (d *deleter) removeFile(path string, size int64) error {
	left := size
	if size > deleteStep {
		var err error
		if left, err = d.shrink(path, size); err != nil {
			return err
		}
	}
	if err := d.fs.Remove(path); err != nil {
		return err
	}
	return d.pace(left)
}

// shrink cuts path down to at most deleteStep bytes, pacing each cut, and
// returns the size left: all of it on a filesystem whose files have no OS
// descriptor to truncate.
func (d *deleter) shrink(path string, size int64) (int64, error) {
	f, err := d.fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return size, err
	}
	defer f.Close()
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return size, nil
	}
	for size > deleteStep {
		next := size - deleteStep
		if err := ftruncate(fd, next); errors.Is(err, errors.ErrUnsupported) {
			return size, nil // no truncation here: the file goes whole
		} else if err != nil {
			return size, err
		}
		size = next
		if err := d.pace(deleteStep); err != nil {
			return size, err
		}
	}
	return size, nil
}

// pace waits as long as freeing n bytes takes at the rate, on the injected
// clock; a Close meanwhile returns errStopped.
func (d *deleter) pace(n int64) error {
	if d.rate <= 0 || n <= 0 {
		return nil
	}
	t := d.clock.NewTimer(time.Duration(float64(n) / float64(d.rate) * float64(time.Second)))
	defer t.Stop()
	select {
	case <-d.quit:
		return errStopped
	case <-t.C():
		return nil
	}
}

// TopicDirs lists the directories the broker whose data directory is dir
// holds for the topic with id: its partitions', and those of its removed
// partitions not yet deleted. A benchmark waits for none to be left before
// it measures the next workload on the same disk.
func TopicDirs(dir string, id uuid.UUID) ([]string, error) {
	names, err := vfs.Default.List(vfs.Default.PathJoin(dir, partitionsDirName))
	if oserror.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("%x-", id[:]) // Key.Dir's
	names = slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, prefix) })
	slices.Sort(names)
	return names, nil
}
