// Package partition is the broker's log layer: topics and their partitions
// over a pluggable storage engine. A Manager owns every topic (created,
// deleted, restored on open); a Partition validates and appends produced
// batches (with idempotent producer checks), tracks the high watermark,
// serves reads of stored batches and offset lookups.
//
// # On disk
//
//	Dir/LOCK                          locked while a Manager has the directory open
//	Dir/topics.meta                   topics, ids, partition counts, configs (meta.go)
//	Dir/producer-ids                  the producer id allocator (broker/producer)
//	Dir/topics/<topic>-<n>/log/       the engine's directory
//	Dir/topics/<topic>-<n>/producer-<offset>.snapshot
//
// Every file beside the engines is small, checksummed and replaced
// atomically, the same for every engine; all I/O goes through
// EngineOptions.FS so crash tests can run on a crashable filesystem.
// topics.meta is the truth: a partition directory it does not list is an
// orphan of an interrupted create or delete and is removed on open.
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
//     seam replication will change (HW = min over the in-sync replicas).
//   - Producer snapshots are taken every Config.SnapshotBytes after a sync
//     to their offset and at Close; on open the newest one not past the log
//     end is loaded and the batch headers after it are replayed.
//   - Retention (retention.ms, retention.bytes) moves the log start at batch
//     granularity on Config.Clock, never past the high watermark, never on
//     internal topics.
package partition

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/producer"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
)

const (
	topicsDirName  = "topics"
	idsFileName    = "producer-ids"
	deletingSuffix = ".deleting"

	// MaxTopicNameLength is Kafka's limit.
	MaxTopicNameLength = 249
	// DefaultMaxPartitions bounds one topic's partition count: each
	// partition opens an engine, so a request for two billion must fail
	// cleanly rather than exhaust the machine.
	DefaultMaxPartitions = 10000
)

// internalTopics are Kafka's internal topic names.
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true}

// Config configures a Manager.
type Config struct {
	// Dir is the root data directory.
	Dir string
	// Engine is the registry name of the storage engine; the caller imports
	// the engine packages so they register.
	Engine string
	// EngineOptions are passed to every partition's engine (sync policy,
	// filesystem, sizes). Its FS is used for the manager's own files too.
	EngineOptions engine.Options
	// Clock; nil means clock.Real.
	Clock clock.Clock
	// Logger; nil discards.
	Logger *slog.Logger
	// DefaultPartitions is used when CreateTopic asks for -1; 0 means 1.
	DefaultPartitions int32
	// MaxPartitions bounds a topic's partition count; 0 means
	// DefaultMaxPartitions.
	MaxPartitions int32
	// Rand is the source of topic ids; nil means crypto/rand.
	Rand io.Reader
	// RetentionCheckInterval is how often retention.ms and retention.bytes
	// are enforced, on Clock; 0 means DefaultRetentionCheckInterval and a
	// negative value disables retention.
	RetentionCheckInterval time.Duration
	// SnapshotBytes is how much a partition appends between two producer
	// state snapshots (a crash replays at most about that much of the log
	// to rebuild the state); 0 means DefaultSnapshotBytes.
	SnapshotBytes int64
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
	// Configs are the configs set explicitly at creation; see
	// ConfigDefaults and AllConfigs for the rest.
	Configs  map[string]string
	Internal bool
}

type topic struct {
	info  TopicInfo
	cfg   topicConfig
	parts []*Partition
}

// Manager owns the topics and partitions of one broker.
type Manager struct {
	cfg Config
	fs  vfs.FS
	ids *producer.IDAllocator

	// admin serializes changes to the topic set (and the metadata file);
	// mu guards the map so lookups never wait for an engine to open.
	admin  sync.Mutex
	mu     sync.RWMutex
	topics map[string]*topic
	closed bool

	quit chan struct{} // closed by Close: background work stops
	done chan struct{} // closed when the retention loop has exited

	// lock is held on Dir/LOCK while the manager is open: a second broker
	// on the same directory would interleave appends with this one's.
	lock io.Closer
}

// ErrDirLocked is returned by OpenManager when another open manager, in
// this process or another, holds the data directory.
var ErrDirLocked = errors.New("data directory in use by another broker")

// lockFileName is the file in Dir that the open manager locks.
const lockFileName = "LOCK"

// OpenManager opens the data directory and restores every topic, partition
// and producer state in it. A metadata file written with another engine
// returns engine.ErrWrongEngine; a damaged one engine.ErrCorrupt.
func OpenManager(cfg Config) (*Manager, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DefaultPartitions <= 0 {
		cfg.DefaultPartitions = 1
	}
	if cfg.MaxPartitions <= 0 {
		cfg.MaxPartitions = DefaultMaxPartitions
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.SnapshotBytes <= 0 {
		cfg.SnapshotBytes = DefaultSnapshotBytes
	}
	if cfg.RetentionCheckInterval == 0 {
		cfg.RetentionCheckInterval = DefaultRetentionCheckInterval
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
	m := &Manager{cfg: cfg, fs: fs, topics: map[string]*topic{}, quit: make(chan struct{}), done: make(chan struct{})}
	if err := m.open(); err != nil {
		m.closePartitions()
		m.unlock()
		return nil, err
	}
	go m.retentionLoop()
	return m, nil
}

func (m *Manager) open() error {
	fs, dir := m.fs, m.cfg.Dir
	if err := fs.MkdirAll(fs.PathJoin(dir, topicsDirName), 0o755); err != nil {
		return fmt.Errorf("partition: create %s: %w", dir, err)
	}
	lock, err := fs.Lock(fs.PathJoin(dir, lockFileName))
	if err != nil {
		return fmt.Errorf("partition: lock %s: %w (%v)", dir, ErrDirLocked, err)
	}
	m.lock = lock
	if err := syncDirs(fs, fs.PathDir(dir), dir); err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	engineName, infos, found, err := readMeta(fs, fs.PathJoin(dir, metaFileName))
	if err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	switch {
	case found && engineName != m.cfg.Engine:
		return fmt.Errorf("partition: %s holds %s engine data, not %s: %w", dir, engineName, m.cfg.Engine, engine.ErrWrongEngine)
	case !found:
		entries, err := fs.List(fs.PathJoin(dir, topicsDirName))
		if err != nil {
			return fmt.Errorf("partition: list %s: %w", dir, err)
		}
		if len(entries) > 0 {
			return fmt.Errorf("partition: %s has partition directories but no %s; refusing to guess: %w", dir, metaFileName, engine.ErrCorrupt)
		}
		if err := m.writeMeta(nil); err != nil {
			return err
		}
	}
	if m.ids, err = producer.OpenIDAllocator(fs, fs.PathJoin(dir, idsFileName), 0); err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	if err := m.removeOrphans(infos); err != nil {
		return err
	}
	for _, info := range infos {
		t := &topic{info: info, cfg: parseTopicConfig(info.Configs)}
		m.topics[info.Name] = t
		for i := int32(0); i < info.Partitions; i++ {
			p, err := openPartition(m, info.Name, i, t.cfg)
			if err != nil {
				return err
			}
			t.parts = append(t.parts, p)
		}
	}
	m.cfg.Logger.Info("partitions restored", "dir", dir, "engine", m.cfg.Engine, "topics", len(infos))
	return nil
}

// removeOrphans deletes partition directories the metadata does not list:
// leftovers of a delete, or of a create, that a crash interrupted.
func (m *Manager) removeOrphans(infos []TopicInfo) error {
	fs, root := m.fs, m.fs.PathJoin(m.cfg.Dir, topicsDirName)
	live := map[string]bool{}
	for _, info := range infos {
		for i := int32(0); i < info.Partitions; i++ {
			live[fmt.Sprintf("%s-%d", info.Name, i)] = true
		}
	}
	names, err := fs.List(root)
	if err != nil {
		return fmt.Errorf("partition: list %s: %w", root, err)
	}
	for _, n := range names {
		if live[n] {
			continue
		}
		m.cfg.Logger.Info("removing orphaned partition directory", "dir", n)
		if err := fs.RemoveAll(fs.PathJoin(root, n)); err != nil {
			return fmt.Errorf("partition: remove orphan %s: %w", n, err)
		}
	}
	return engine.SyncDir(fs, root)
}

// writeMeta persists the topic set. The caller holds admin.
func (m *Manager) writeMeta(infos []TopicInfo) error {
	b, err := encodeMeta(m.cfg.Engine, infos)
	if err != nil {
		return err
	}
	if err := engine.WriteFileAtomic(m.fs, m.fs.PathJoin(m.cfg.Dir, metaFileName), b); err != nil {
		return fmt.Errorf("partition: write topic metadata: %w", err)
	}
	return nil
}

func (m *Manager) checkOpen() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return fmt.Errorf("partition manager: %w", engine.ErrClosed)
	}
	return nil
}

// Topics lists every topic, sorted by name.
func (m *Manager) Topics() []TopicInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]TopicInfo, 0, len(m.topics))
	for _, t := range m.topics {
		out = append(out, cloneInfo(t.info))
	}
	slices.SortFunc(out, func(a, b TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Topic describes one topic.
func (m *Manager) Topic(name string) (TopicInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, ok := m.topics[name]
	if !ok {
		return TopicInfo{}, false
	}
	return cloneInfo(t.info), true
}

func cloneInfo(i TopicInfo) TopicInfo {
	c := i
	c.Configs = make(map[string]string, len(i.Configs))
	for k, v := range i.Configs {
		c.Configs[k] = v
	}
	return c
}

// Partition returns partition p of topic, or an error wrapping
// kerr.UnknownTopicOrPartition.
func (m *Manager) Partition(topic string, p int32) (*Partition, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, ok := m.topics[topic]
	if !ok || p < 0 || p >= int32(len(t.parts)) {
		return nil, fmt.Errorf("partition %s-%s: %w", topic, strconv.Itoa(int(p)), kerr.UnknownTopicOrPartition)
	}
	return t.parts[p], nil
}

// InitProducerID allocates a producer id that was never handed out before,
// at epoch 0 (there are no transactional ids whose epoch would be bumped).
func (m *Manager) InitProducerID() (int64, int16, error) {
	if err := m.checkOpen(); err != nil {
		return 0, 0, err
	}
	id, err := m.ids.Next()
	if err != nil {
		return 0, 0, fmt.Errorf("init producer id: %w: %w", kerr.KafkaStorageError, err)
	}
	return id, 0, nil
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
	err := m.closePartitions()
	m.unlock()
	return err
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

// retentionLoop enforces retention on every partition each
// RetentionCheckInterval of the injected clock, until Close.
func (m *Manager) retentionLoop() {
	defer close(m.done)
	every := m.cfg.RetentionCheckInterval
	if every < 0 {
		return
	}
	t := m.cfg.Clock.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-m.quit:
			return
		case <-t.C():
			if err := m.EnforceRetention(); err != nil {
				m.cfg.Logger.Warn("retention failed", "err", err)
			}
			t.Reset(every)
		}
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

func (m *Manager) allPartitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var parts []*Partition
	for _, t := range m.topics {
		parts = append(parts, t.parts...)
	}
	return parts
}

// closePartitions closes every partition, a few at a time (each close
// fsyncs), and returns the first error.
func (m *Manager) closePartitions() error {
	parts := m.allPartitions()
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
		sem      = make(chan struct{}, 8)
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
