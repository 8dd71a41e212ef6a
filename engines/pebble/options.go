package pebble

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	pebbledb "github.com/cockroachdb/pebble/v2"

	"github.com/minikafka/minikafka/engine"
)

// Tuning: one database per data directory (a Store), or per log opened
// alone (the controller quorum's raft log). See the package documentation
// for the reasoning.
const (
	memTableBytes         = 32 << 20 // per DB; pebble starts at 256 KiB and doubles up to it
	memTablesMax          = 4        // queued memtables before writes stall
	blockBytes            = 32 << 10 // sstable data blocks: sequential scans, few point reads
	l0TargetFileBytes     = 8 << 20  // doubles per level below
	sharedCacheBytes      = 32 << 20 // block cache shared by every pebble engine in the process
	sharedOpenFilesMax    = 1024     // sstable readers kept open, shared likewise
	sharedFileCacheShards = 4
	// defaultDeleteRate paces the deletion of sstables when
	// Options.DeleteRate is 0: the broker's deleter's default.
	defaultDeleteRate = 512 << 20
)

// shared holds what every pebble DB in the process uses together, created on
// first use and kept for the life of the process.
var shared struct {
	once  sync.Once
	cache *pebbledb.Cache
	files *pebbledb.FileCache
}

func sharedCaches() (*pebbledb.Cache, *pebbledb.FileCache) {
	shared.once.Do(func() {
		shared.cache = pebbledb.NewCache(sharedCacheBytes)
		shared.files = pebbledb.NewFileCache(sharedFileCacheShards, sharedOpenFilesMax)
	})
	return shared.cache, shared.files
}

// storeOptions returns the pebble options for one engine's store.
func storeOptions(opts engine.Options, fs *storeFS, log *storeLog) *pebbledb.Options {
	cache, files := sharedCaches()
	o := &pebbledb.Options{
		FS:                          fs,
		Cache:                       cache,
		FileCache:                   files,
		MemTableSize:                memTableBytes,
		MemTableStopWritesThreshold: memTablesMax,
		FormatMajorVersion:          pebbledb.FormatNewest,
		Logger:                      log,
		EventListener: &pebbledb.EventListener{
			BackgroundError: func(err error) { log.log.Error("pebble: background error", "err", err) },
			DataCorruption: func(info pebbledb.DataCorruptionInfo) {
				log.log.Error("pebble: data corruption", "path", info.Path, "err", info.Details)
			},
			WriteStallBegin: func(info pebbledb.WriteStallBeginInfo) {
				log.log.Warn("pebble: write stall", "reason", info.Reason)
			},
		},
	}
	switch {
	case opts.DeleteRate > 0:
		o.TargetByteDeletionRate = int(opts.DeleteRate)
	case opts.DeleteRate == 0:
		o.TargetByteDeletionRate = defaultDeleteRate
	}
	o.TargetFileSizes[0] = l0TargetFileBytes
	for i := range o.Levels {
		o.Levels[i].BlockSize = blockBytes
	}
	return o
}

// storeLog is pebble's logger for one engine. Pebble calls Fatalf when a
// MANIFEST write fails (and when a WAL write fails, but storeFS hides those
// from pebble), expecting the process to exit; for a commit it then carries
// on as if the write had succeeded. A broker serving many
// partitions cannot exit for one failed disk write, so Fatalf records the
// error instead, and every write path of the engine checks it after calling
// pebble: the engine turns it into its sticky error.
type storeLog struct {
	log   *slog.Logger
	fatal atomic.Pointer[fatalError]
}

var _ pebbledb.Logger = (*storeLog)(nil)

func (l *storeLog) Infof(format string, args ...any) {
	l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (l *storeLog) Errorf(format string, args ...any) {
	l.log.Error("pebble: " + fmt.Sprintf(format, args...))
}

func (l *storeLog) Fatalf(format string, args ...any) {
	fe := &fatalError{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			fe.cause = err
			break
		}
	}
	l.log.Error("pebble: fatal: " + fe.msg)
	l.fatal.CompareAndSwap(nil, fe)
}

// err returns the first fatal error pebble reported, or nil.
func (l *storeLog) err() error {
	if fe := l.fatal.Load(); fe != nil {
		return fe
	}
	return nil
}

// fatalError is what pebble reported through Fatalf; it unwraps to the error
// pebble passed along, if any, so errors.Is sees an injected I/O error.
type fatalError struct {
	msg   string
	cause error
}

func (e *fatalError) Error() string { return "pebble: fatal: " + e.msg }
func (e *fatalError) Unwrap() error { return e.cause }

// storeErr maps a pebble error to the engine's sentinels where one applies.
func storeErr(err error) error {
	if err != nil && errors.Is(err, pebbledb.ErrCorruption) && !errors.Is(err, engine.ErrCorrupt) {
		return fmt.Errorf("%w: %w", engine.ErrCorrupt, err)
	}
	return err
}
