// Package partition is the broker's log layer: the partitions this broker
// holds, over a pluggable storage engine. A Manager owns them (created,
// removed, restored on open) as the cluster's metadata says; a Partition
// validates and appends produced batches (with idempotent producer checks),
// tracks the high watermark, serves reads of stored batches and offset
// lookups.
//
// # On disk
//
//	Dir/LOCK                                   locked while a Manager has the directory open
//	Dir/high-watermark.checkpoint              every partition's high watermark (checkpoint.go)
//	Dir/store/                                 the engine's store of every partition's log (engine.Store; its ENGINE names the engine)
//	Dir/partitions/<topic id>-<n>/partition.meta   whose partition this is, and which log of the store (meta.go)
//	Dir/partitions/<topic id>-<n>/leader-epoch.checkpoint
//	Dir/partitions/<topic id>-<n>/producer-<offset>.snapshot
//
// Directories are keyed by topic id, not name, and logs by the id the
// store hands out, never twice: a topic deleted and created again while
// this broker was down is a different directory and a different log, never
// mistaken for the old one. Every file beside the store is small,
// checksummed and replaced atomically, the same for every engine; all I/O
// goes through EngineOptions.FS so crash tests can run on a crashable
// filesystem. A partition directory without partition.meta is an orphan of
// an interrupted creation and is removed on open, and so is a log of the
// store that no partition.meta names; a partition that the metadata no
// longer assigns here is removed by the broker (Manager.Remove) once it has
// caught up. An older layout's directory is migrated on open (store.go).
//
// # Commit rules
//
//   - Append orders a batch (offsets assigned, engine append done) and
//     returns; the producer state advances then, because the next pipelined
//     batch of the same producer is checked against it. A batch whose engine
//     append failed is never remembered; a crash drops unsynced batches and
//     the state is rebuilt from what the log kept.
//   - The high watermark is the durable end of the log under SyncAlways
//     (moved by a per-partition goroutine that shares the engine's group
//     commit, and by WaitDurable), and the log end otherwise. Consumers read
//     and acks=all producers wait below it only. advanceHighWatermark is the
//     seam replication changes (HW = min over the in-sync replicas).
//   - Producer snapshots are taken every Config.SnapshotBytes after a sync
//     to their offset and at Close; on open the newest one not past the log
//     end is loaded and the batch headers after it are replayed.
//   - Retention (retention.ms, retention.bytes) moves the log start at batch
//     granularity on Config.Clock, never past the high watermark, never on
//     internal topics.
package partition

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
)

const (
	partitionsDirName = "partitions"
	deletingSuffix    = ".deleting"
	// legacyMetaFile is the topic list of data directories written before
	// topics came from the cluster's metadata.
	legacyMetaFile = "topics.meta"
)

// Config configures a Manager.
type Config struct {
	// Dir is the root data directory.
	Dir string
	// Engine is the registry name of the storage engine; the program
	// imports the engine packages so they register.
	Engine string
	// EngineOptions are passed to every partition's engine (sync policy,
	// filesystem, sizes). Its FS is used for the manager's own files too.
	EngineOptions engine.Options
	// Clock; nil means clock.Real.
	Clock clock.Clock
	// Logger; nil discards.
	Logger *slog.Logger
	// RetentionCheckInterval is how often retention.ms and retention.bytes
	// are enforced, on Clock; 0 means DefaultRetentionCheckInterval and a
	// negative value disables retention.
	RetentionCheckInterval time.Duration
	// SnapshotBytes is how much a partition appends between two producer
	// state snapshots (a crash replays at most about that much of the log
	// to rebuild the state); 0 means DefaultSnapshotBytes.
	SnapshotBytes int64
	// Replication is what the partitions need of the broker to replicate.
	Replication Replication
	// TickInterval is how often leaders check their followers' lag and
	// retry ISR changes; 0 means DefaultTickInterval.
	TickInterval time.Duration
	// DeleteRate is how fast, in bytes per second, the files of removed
	// partitions are deleted in the background (deleter.go); 0 means
	// DefaultDeleteRate and a negative value does not pace them.
	DeleteRate int64
	// OnLogFailure, if set, is called when a partition's log can no longer
	// be written (a sync failed, which is final: the partition stops taking
	// writes; or the engine refused an append, a truncation, a log start
	// move or the leader epoch checkpoint for an I/O error: a full disk,
	// say), from whichever goroutine saw it, possibly more than once.
	// Kafka takes a failed log directory offline and halts the broker once
	// none is left; a broker on one data directory should stop, so that
	// the controller moves its leaderships and its followers' ISR places
	// to replicas that can write.
	OnLogFailure func(error)
	// Manual starts no goroutine: no partition syncs or snapshots in the
	// background (the caller calls Partition.Sync after appends), no
	// retention or tick loop (the caller calls EnforceRetention and Tick).
	// The simulator runs partitions this way, one event at a time.
	Manual bool

	// mut: the protections switched off (Mutate, mutations build only).
	mut mutations
}

// DefaultTickInterval is Config.TickInterval's default.
const DefaultTickInterval = 250 * time.Millisecond

// Key names one partition: its topic's id and its index.
type Key struct {
	TopicID uuid.UUID
	Index   int32
}

func (k Key) String() string { return fmt.Sprintf("%s-%d", k.TopicID, k.Index) }

// Spec is what the metadata says of a partition this broker holds.
type Spec struct {
	Topic   string
	TopicID uuid.UUID
	Index   int32
	// Configs are the topic's explicit configs (validated by the controller).
	Configs map[string]string
}

// Key is the spec's partition key.
func (s Spec) Key() Key { return Key{s.TopicID, s.Index} }

// Manager owns the partitions of one broker.
type Manager struct {
	cfg Config
	fs  vfs.FS

	// admin: Ensure holds it shared, so that partitions open side by side
	// (an engine such as badger takes a tenth of a second to open one);
	// Remove and Close hold it alone. ensuring serializes the Ensures of
	// one key. mu guards the maps so lookups never wait for an engine to
	// open.
	admin    sync.RWMutex
	ensuring sync.Map // Key -> *sync.Mutex
	mu       sync.RWMutex
	parts    map[Key]*Partition
	names    map[string]uuid.UUID // topic name -> the id its partitions here have
	closed   bool

	quit   chan struct{} // closed by Close: background work stops
	done   chan struct{} // closed when the retention loop has exited
	ticked chan struct{} // closed when the tick loop has exited

	// tickMu serializes Tick and the high watermark checkpoint's writes;
	// lastSave is when Tick last wrote it. savedHWs is what the checkpoint
	// held at open, for the partitions' opens.
	tickMu   sync.Mutex
	lastSave time.Time
	savedHWs map[Key]int64

	// store holds every partition's log.
	store engine.Store

	// deleter deletes the directories of removed partitions; asides
	// numbers their names.
	deleter *deleter
	asides  atomic.Int64

	// lock is held on Dir/LOCK while the manager is open: a second broker
	// on the same directory would interleave appends with this one's.
	lock io.Closer
}

// ErrDirLocked is returned by OpenManager when another open manager, in
// this process or another, holds the data directory.
var ErrDirLocked = errors.New("data directory in use by another broker")

// lockFileName is the file in Dir that the open manager locks.
const lockFileName = "LOCK"

// OpenManager opens the data directory and every partition in it (each
// engine recovers its log, each partition its producer state). A directory
// written with another engine returns engine.ErrWrongEngine.
func OpenManager(cfg Config) (*Manager, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SnapshotBytes <= 0 {
		cfg.SnapshotBytes = DefaultSnapshotBytes
	}
	if cfg.RetentionCheckInterval == 0 {
		cfg.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = DefaultTickInterval
	}
	if cfg.DeleteRate == 0 {
		cfg.DeleteRate = DefaultDeleteRate
	}
	if cfg.EngineOptions.Clock == nil {
		cfg.EngineOptions.Clock = cfg.Clock
	}
	if _, err := engine.Lookup(cfg.Engine); err != nil {
		return nil, err
	}
	fs := cfg.EngineOptions.FS
	if fs == nil {
		fs = vfs.Default
	}
	m := &Manager{
		cfg: cfg, fs: fs, parts: map[Key]*Partition{}, names: map[string]uuid.UUID{},
		quit: make(chan struct{}), done: make(chan struct{}), ticked: make(chan struct{}),
		lastSave: cfg.Clock.Now(),
	}
	m.deleter = newDeleter(fs, cfg.Clock, cfg.Logger, cfg.DeleteRate, cfg.Manual, m.quit)
	if m.cfg.EngineOptions.Discard == nil {
		// Retention's dropped segments and deleted logs, paced too.
		m.cfg.EngineOptions.Discard = m.deleter.remove
	}
	if m.cfg.EngineOptions.DeleteRate == 0 {
		m.cfg.EngineOptions.DeleteRate = cfg.DeleteRate // for stores that pace their own deletions
	}
	m.asides.Store(cfg.Clock.Now().UnixNano())
	if err := m.open(); err != nil {
		close(m.quit)
		<-m.deleter.done
		m.closePartitions(m.allPartitions())
		m.closeStore()
		m.unlock()
		return nil, err
	}
	if cfg.Manual {
		close(m.done)
		close(m.ticked)
	} else {
		// Retention is enforced every RetentionCheckInterval, and Tick
		// (the replication state machines' clock) every TickInterval.
		go m.every(m.cfg.RetentionCheckInterval, m.done, func() {
			if err := m.EnforceRetention(); err != nil {
				m.cfg.Logger.Warn("retention failed", "err", err)
			}
		})
		go m.every(m.cfg.TickInterval, m.ticked, func() { m.Tick(m.cfg.Clock.Now()) })
	}
	return m, nil
}

// Tick does now what the tick loop does every TickInterval, for a Manager
// opened with Config.Manual: every partition's leader is ticked (ISR
// shrink, AlterPartition retries), in key order, and the high watermark
// checkpoints are written when hwCheckpointEvery has passed since the last
// time they were.
func (m *Manager) Tick(now time.Time) {
	m.tickMu.Lock()
	defer m.tickMu.Unlock()
	for _, k := range m.Keys() { // in order: the simulator replays it
		if p, ok := m.Get(k); ok {
			p.Tick(now)
		}
	}
	if now.Sub(m.lastSave) >= hwCheckpointEvery {
		m.saveHWsLocked(m.allPartitions())
		m.lastSave = now
	}
}

// hwCheckpointEvery is how often the high watermark checkpoint is written
// when some partition's moved.
const hwCheckpointEvery = 2 * time.Second

// saveHWsLocked writes the high watermark checkpoint of parts, the
// partitions held, if one of them moved since it was last written; the
// caller holds tickMu.
func (m *Manager) saveHWsLocked(parts []*Partition) {
	hws := make(map[Key]int64, len(parts))
	moved := false
	for _, p := range parts {
		hw := p.wm.get()
		hws[p.key] = hw
		moved = moved || hw != p.savedHW
	}
	if !moved {
		return
	}
	path := m.fs.PathJoin(m.cfg.Dir, hwCheckpointFile)
	if err := engine.WriteChecked(m.fs, path, hwMagic, encodeHWs(hws)); err != nil {
		m.cfg.Logger.Warn("high watermark checkpoint failed", "err", err)
		return
	}
	for _, p := range parts {
		p.savedHW = hws[p.key]
	}
}

// loadHWs reads the high watermark checkpoint for the partitions' opens;
// a missing or unreadable one is no high watermark at all: each starts
// from its log start and learns the rest.
func (m *Manager) loadHWs() map[Key]int64 {
	body, found, err := engine.ReadChecked(m.fs, m.fs.PathJoin(m.cfg.Dir, hwCheckpointFile), hwMagic)
	if err == nil && found {
		var hws map[Key]int64
		if hws, err = decodeHWs(body); err == nil {
			return hws
		}
	}
	if err != nil {
		m.cfg.Logger.Warn("high watermark checkpoint unreadable; partitions start from their log start", "err", err)
	}
	return nil
}

// every calls do each interval of the injected clock until Close, then
// closes done. A negative interval calls nothing.
func (m *Manager) every(interval time.Duration, done chan struct{}, do func()) {
	defer close(done)
	if interval < 0 {
		return
	}
	t := m.cfg.Clock.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-m.quit:
			return
		case <-t.C():
		}
		do()
		t.Reset(interval)
	}
}

func dirName(id uuid.UUID, index int32) string { return Key{id, index}.Dir() }

// Dir is the name of the partition's directory in Dir/partitions.
func (k Key) Dir() string { return fmt.Sprintf("%x-%d", k.TopicID[:], k.Index) }

func (m *Manager) partitionDir(k Key) string {
	return m.fs.PathJoin(m.cfg.Dir, partitionsDirName, dirName(k.TopicID, k.Index))
}

func (m *Manager) checkOpen() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return fmt.Errorf("partition manager: %w", engine.ErrClosed)
	}
	return nil
}

// Ensure returns the partition spec describes, creating it (an empty log)
// if this broker does not hold it yet, and applies the spec's configs.
func (m *Manager) Ensure(spec Spec) (*Partition, error) {
	m.admin.RLock()
	defer m.admin.RUnlock()
	if err := m.checkOpen(); err != nil {
		return nil, err
	}
	k := spec.Key()
	kl, _ := m.ensuring.LoadOrStore(k, new(sync.Mutex))
	kl.(*sync.Mutex).Lock()
	defer kl.(*sync.Mutex).Unlock()
	m.mu.RLock()
	p, ok := m.parts[k]
	m.mu.RUnlock()
	if !ok {
		var err error
		if p, err = m.create(spec); err != nil {
			return nil, err
		}
	}
	p.setConfig(parseTopicConfig(spec.Configs), m.cfg.EngineOptions.WithDefaults().SegmentBytes)
	m.mu.Lock()
	m.parts[k] = p
	m.names[spec.Topic] = spec.TopicID
	m.mu.Unlock()
	return p, nil
}

// create makes the directory and the log of a new partition and opens
// it. The directory counts only once its partition.meta is in place (the
// open removes one without, as the orphan of an interrupted creation), and
// the log once a partition.meta names it (the open deletes the logs none
// names), so the meta file takes its place last, after the store has made
// the log (durably, as Create does): a crash at any point before leaves an
// orphan, and nothing was appended to it. The meta file is written and
// synced while the partition opens on its new log, and once it is renamed
// into place the partition's directory and its parent are synced side by
// side.
func (m *Manager) create(spec Spec) (*Partition, error) {
	fail := func(err error) (*Partition, error) {
		return nil, fmt.Errorf("partition %s-%d: %w", spec.Topic, spec.Index, err)
	}
	dir := m.partitionDir(spec.Key())
	if err := m.fs.RemoveAll(dir); err != nil {
		return fail(fmt.Errorf("clear %s: %w", dir, err))
	}
	if err := m.fs.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	cfg := parseTopicConfig(spec.Configs)
	id, log, err := m.store.Create(engine.LogOptions{SegmentBytes: cfg.segmentBytes})
	if err != nil {
		return fail(fmt.Errorf("create its log in the %s store: %w", m.cfg.Engine, err))
	}
	b, err := encodeMeta(metaFile{Topic: spec.Topic, TopicID: spec.TopicID, Index: spec.Index, Log: id.String()})
	if err != nil {
		_ = log.Close()
		return nil, err
	}
	meta := m.fs.PathJoin(dir, metaFileName)
	var p *Partition
	var openErr error
	if err := m.sideBySide(
		func() error { p, openErr = openPartition(m, spec, id, log, nil); return nil }, // the directory is new: nothing in it to restore
		func() error { return engine.StageFile(m.fs, meta, b) },
	); err != nil || openErr != nil {
		if p != nil {
			_ = p.close()
		}
		m.dropLog(id)
		if openErr != nil {
			return nil, openErr
		}
		return fail(err)
	}
	err = engine.PlaceStaged(m.fs, meta)
	if err == nil {
		err = m.sideBySide(
			func() error { return engine.SyncDir(m.fs, dir) },
			func() error { return engine.SyncDir(m.fs, m.fs.PathDir(dir)) },
		)
	}
	if err != nil {
		_ = p.close()
		return fail(err)
	}
	return p, nil
}

// dropLog deletes a log no partition names (the next open's sweep does,
// if this fails).
func (m *Manager) dropLog(id engine.LogID) {
	if err := m.store.Delete(id); err != nil {
		m.cfg.Logger.Warn("deleting the log of a partition that could not be created", "log", id.String(), "err", err)
	}
}

// sideBySide runs the jobs on goroutines of their own and returns their
// errors joined; in Manual mode, whose caller wants every I/O in a
// deterministic order, one after the other.
func (m *Manager) sideBySide(jobs ...func() error) error {
	errs := make([]error, len(jobs))
	if m.cfg.Manual {
		for i, j := range jobs {
			errs[i] = j()
		}
		return errors.Join(errs...)
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { errs[i] = j() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Remove closes the partition and deletes its data. Operations in flight
// on it fail with kerr.NotLeaderForPartition. Removing a partition this
// broker does not hold does nothing.
func (m *Manager) Remove(k Key) error {
	m.admin.Lock()
	defer m.admin.Unlock()
	if err := m.checkOpen(); err != nil {
		return err
	}
	m.ensuring.Delete(k)
	m.mu.Lock()
	p, ok := m.parts[k]
	delete(m.parts, k)
	if ok && m.names[p.topic] == k.TopicID && !m.holdsTopicLocked(k.TopicID) {
		delete(m.names, p.topic)
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	if err := p.close(); err != nil {
		m.cfg.Logger.Warn("closing a removed partition", "topic", p.topic, "partition", p.index, "err", err)
	}
	// The directory goes first, durably: a crash then leaves a log no
	// partition names, which the next open deletes, never a partition
	// whose log is gone.
	aside := m.removeDir(p.dir)
	if err := engine.SyncDir(m.fs, m.fs.PathJoin(m.cfg.Dir, partitionsDirName)); err != nil {
		return err
	}
	if err := m.store.Delete(p.logID); err != nil {
		m.cfg.Logger.Warn("deleting a removed partition's log failed; the next open retries", "topic", p.topic, "partition", p.index, "err", err)
	}
	if aside != "" {
		// After the log's files (segment's), which the store handed the
		// deleter first: a directory left means files still to delete.
		m.deleter.remove(aside)
	}
	return nil
}

func (m *Manager) holdsTopicLocked(id uuid.UUID) bool {
	for k := range m.parts {
		if k.TopicID == id {
			return true
		}
	}
	return false
}

// removeDir renames dir aside, so that its name is free at once and a
// crash leaves an orphan the next open removes, and returns the name it
// has now, for the deleter. A directory that cannot be renamed is removed
// in place ("" returned).
func (m *Manager) removeDir(dir string) string {
	aside, err := m.setAside(dir)
	if err != nil {
		m.cfg.Logger.Warn("renaming a removed partition's directory aside failed; removing it in place", "dir", dir, "err", err)
		m.deleter.removeAll(dir)
		return ""
	}
	return aside
}

// setAside renames dir to a name of its own ending in deletingSuffix (the
// partition may come back here, and be removed again, before the deleter
// is done with the first) and returns it.
func (m *Manager) setAside(dir string) (string, error) {
	aside := fmt.Sprintf("%s.%x%s", dir, m.asides.Add(1), deletingSuffix)
	return aside, m.fs.Rename(dir, aside)
}

// Partition returns partition index of the topic called topic, or an error
// wrapping kerr.UnknownTopicOrPartition when this broker does not hold it.
func (m *Manager) Partition(topic string, index int32) (*Partition, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if id, ok := m.names[topic]; ok {
		if p, ok := m.parts[Key{id, index}]; ok {
			return p, nil
		}
	}
	return nil, fmt.Errorf("partition %s-%s: %w", topic, strconv.Itoa(int(index)), kerr.UnknownTopicOrPartition)
}

// Get returns the partition with key k.
func (m *Manager) Get(k Key) (*Partition, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.parts[k]
	return p, ok
}

// Keys lists the partitions this broker holds, sorted.
func (m *Manager) Keys() []Key {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Key, 0, len(m.parts))
	for k := range m.parts {
		out = append(out, k)
	}
	slices.SortFunc(out, CompareKeys)
	return out
}

// CompareKeys orders keys by topic id, then index. The bytes sort as their
// hex does, without a string per compare.
func CompareKeys(a, b Key) int {
	if c := bytes.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.Index, b.Index)
}

// Close closes every partition: each engine syncs and closes, and each
// partition writes its producer snapshot. Later calls return
// engine.ErrClosed.
func (m *Manager) Close() error {
	m.admin.Lock()
	defer m.admin.Unlock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("partition manager: %w", engine.ErrClosed)
	}
	m.closed = true
	m.mu.Unlock()
	close(m.quit)
	<-m.done
	<-m.ticked
	<-m.deleter.done
	parts := m.allPartitions()
	err := m.closePartitions(parts)
	m.tickMu.Lock()
	m.saveHWsLocked(parts)
	m.tickMu.Unlock()
	if cerr := m.closeStore(); err == nil {
		err = cerr
	}
	m.unlock()
	return err
}

// closeStore closes the store, once the partitions are closed.
func (m *Manager) closeStore() error {
	if m.store == nil {
		return nil
	}
	err := m.store.Close()
	m.store = nil
	if err != nil {
		return fmt.Errorf("partition: close the store: %w", err)
	}
	return nil
}

// unlock releases the data directory, once the partitions are closed.
func (m *Manager) unlock() {
	if m.lock != nil {
		if err := m.lock.Close(); err != nil {
			m.cfg.Logger.Warn("release the data directory lock", "err", err)
		}
		m.lock = nil
	}
}

// EnforceRetention applies retention.ms and retention.bytes to every
// partition now (by Config.Clock), as the background check does every
// RetentionCheckInterval, and returns the first error.
func (m *Manager) EnforceRetention() error {
	now := m.cfg.Clock.Now()
	var first error
	for _, p := range m.allPartitions() {
		if _, err := p.enforceRetention(now); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// allPartitions are the partitions held, in key order.
func (m *Manager) allPartitions() []*Partition {
	var parts []*Partition
	for _, k := range m.Keys() {
		if p, ok := m.Get(k); ok {
			parts = append(parts, p)
		}
	}
	return parts
}

// closePartitions closes every partition, closeWorkers at a time, and
// returns the first error. A Manual manager closes them one
// after the other, in key order, on the caller's goroutine.
func (m *Manager) closePartitions(parts []*Partition) error {
	if m.cfg.Manual {
		var first error
		for _, p := range parts {
			if err := p.close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
		sem      = make(chan struct{}, closeWorkers)
	)
	for _, p := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := p.close(); err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}
