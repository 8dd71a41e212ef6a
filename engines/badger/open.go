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
	memTableBytes     = 32 << 20
	memTablesMax      = 3
	valueThreshold    = 256
	valueLogFileBytes = 64 << 20
	compactors        = 2 // Badger's minimum short of none
)

// storeOptions returns the Badger options for the database in path.
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

// syncDirs fsyncs each directory in turn.
func syncDirs(dirs ...string) error {
	for _, d := range dirs {
		if err := syncPath(d); err != nil {
			return err
		}
	}
	return nil
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
