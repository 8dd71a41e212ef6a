package badger

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	badgerdb "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/minikafka/minikafka/engine"
)

// Tuning; see the package documentation.
const (
	memTableBytes     = 8 << 20
	memTablesMax      = 2
	valueThreshold    = 256
	valueLogFileBytes = 64 << 20
	compactors        = 2 // Badger's minimum short of none
)

// storeOptions returns the Badger options for one engine's store in path.
func storeOptions(path string, opts engine.Options, log *storeLog) badgerdb.Options {
	vlogBytes := max(int64(valueLogFileBytes), 2*int64(opts.MaxBatchBytes)+1<<20)
	vlogBytes = min(vlogBytes, 2<<30-1)
	return badgerdb.DefaultOptions(path).
		WithSyncWrites(true).
		WithMemTableSize(memTableBytes).
		WithNumMemtables(memTablesMax).
		WithNumLevelZeroTables(memTablesMax + 1).
		WithNumLevelZeroTablesStall(3 * (memTablesMax + 1)).
		WithValueThreshold(valueThreshold).
		WithValueLogFileSize(vlogBytes).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithNumCompactors(compactors).
		WithDetectConflicts(false).
		WithMetricsEnabled(false).
		WithNumVersionsToKeep(1).
		WithLogger(log)
}

// Open opens (or creates) the badger log in dir. It refuses a custom
// filesystem: Badger does its own I/O.
func Open(dir string, opts engine.Options) (*Engine, error) {
	if opts.CustomFS() {
		return nil, fmt.Errorf("engine %s: custom filesystem: %w", Name, engine.ErrUnsupported)
	}
	opts = opts.WithDefaults()
	if err := engine.ClaimDir(opts.FS, dir, Name); err != nil {
		return nil, err
	}
	log := &storeLog{log: opts.Logger}
	path := filepath.Join(dir, "db")
	if err := prepareDir(path, log.log); err != nil {
		return nil, fmt.Errorf("badger: open %s: %w", path, err)
	}
	db, err := badgerdb.Open(storeOptions(path, opts, log))
	if err == nil {
		err = log.err() // Badger may have logged, and skipped, a damaged table
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, fmt.Errorf("badger: open %s: %w", path, storeErr(err))
	}
	e := &Engine{
		db:            db,
		log:           log,
		policy:        opts.Sync,
		maxBatchBytes: opts.MaxBatchBytes,
		meter:         engine.NewSyncMeter(opts),
		changed:       make(chan struct{}),
		kick:          make(chan struct{}, 1),
		stop:          make(chan struct{}),
	}
	if err := e.recover(); err != nil {
		db.Close()
		return nil, fmt.Errorf("badger: open %s: %w", path, storeErr(err))
	}
	opts.Logger.Debug("badger: opened", "dir", dir, "start", e.start, "end", e.end)
	// Timers start here, not in their goroutines, so that a manual clock
	// advanced right after Open fires them.
	e.workers.Add(2)
	go e.flushLoop()
	go e.every(opts.Clock.NewTimer(gcInterval), gcInterval, e.collectGarbage)
	if opts.Sync == engine.SyncInterval {
		e.workers.Add(1)
		go e.every(opts.Clock.NewTimer(opts.SyncInterval), opts.SyncInterval, e.wake)
	}
	return e, nil
}

// prepareDir readies an existing store directory for Badger's Open.
//
// It deletes empty memtable WAL (.mem) and value log (.vlog) files: Badger
// creates one of each at every Open, and a process killed between creating
// such a file and sizing it leaves it empty; Badger then refuses to open the
// directory ("Create a new file"). An empty file holds nothing.
//
// Then it fsyncs every file and the directory. A killed process leaves
// written but unsynced data in the page cache; Badger would recover it from
// there and the engine would count it durable (a Sync returns at once), yet
// Badger's Open syncs none of it. Syncing first makes everything Open
// recovers durable; on a store closed cleanly it costs little.
func prepareDir(path string, log *slog.Logger) error {
	entries, err := os.ReadDir(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, d := range entries {
		name := d.Name()
		if !d.Type().IsRegular() {
			continue
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		file := filepath.Join(path, name)
		if info.Size() == 0 && (strings.HasSuffix(name, ".mem") || strings.HasSuffix(name, ".vlog")) {
			if err := os.Remove(file); err != nil {
				return err
			}
			log.Info("badger: removed an empty log file left by a crash", "file", name)
			continue
		}
		if err := syncPath(file); err != nil {
			return err
		}
	}
	return syncPath(path)
}

func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// Close implements engine.LogEngine: it commits what is pending, stops the
// engine's goroutines and closes Badger.
func (e *Engine) Close() error {
	e.life.Lock()
	defer e.life.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.closed = true
	close(e.stop)
	e.workers.Wait()
	e.flushMu.Lock()
	err := e.flushLocked()
	e.flushMu.Unlock()
	if err != nil {
		err = fmt.Errorf("badger: close: %w", err)
	}
	e.mu.Lock()
	e.stopped = true
	e.broadcastLocked()
	e.mu.Unlock()
	if cerr := e.db.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("badger: close: %w", storeErr(cerr))
	}
	return err
}

// storeLog is Badger's logger for one engine. Badger logs some failures
// instead of returning them (a failed value log fsync in a commit, a damaged
// table it then skips at open); every Errorf is kept, and the engine treats
// the first as a failed write.
type storeLog struct {
	log   *slog.Logger
	first atomic.Pointer[error]
}

var _ badgerdb.Logger = (*storeLog)(nil)

func (l *storeLog) Errorf(format string, args ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	l.log.Error("badger: " + msg)
	err := errors.New("badger: " + msg)
	if strings.Contains(msg, "CHECKSUM_MISMATCH") || strings.Contains(msg, "Ignoring table") {
		err = fmt.Errorf("%w: %w", engine.ErrCorrupt, err)
	}
	l.first.CompareAndSwap(nil, &err)
}

func (l *storeLog) Warningf(format string, args ...any) {
	l.log.Warn("badger: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (l *storeLog) Infof(format string, args ...any) {
	l.log.Debug("badger: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (l *storeLog) Debugf(format string, args ...any) {}

// err returns the first error Badger logged, or nil.
func (l *storeLog) err() error {
	if p := l.first.Load(); p != nil {
		return *p
	}
	return nil
}

// storeErr maps a Badger error to the engine's sentinels where one applies.
func storeErr(err error) error {
	if err == nil || errors.Is(err, engine.ErrCorrupt) {
		return err
	}
	if strings.Contains(err.Error(), "CHECKSUM_MISMATCH") || strings.Contains(err.Error(), "checksum mismatch") {
		return fmt.Errorf("%w: %w", engine.ErrCorrupt, err)
	}
	return err
}
