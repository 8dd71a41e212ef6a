package partition

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/bufpool"
	"github.com/minikafka/minikafka/broker/producer"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/replication"
)

// DefaultSnapshotBytes is how much appended data triggers a producer state
// snapshot by default; it bounds the log scan after a crash.
const DefaultSnapshotBytes = 64 << 20

// producerExpiryMs is Kafka's producer.id.expiration.ms default: a producer
// silent for a day is forgotten when a snapshot is taken.
const producerExpiryMs = 24 * 60 * 60 * 1000

// Appended is the outcome of Partition.Append.
type Appended struct {
	BaseOffset int64
	LastOffset int64
	// LogAppendTime is -1: topics use CreateTime.
	LogAppendTime  int64
	LogStartOffset int64
	// Duplicate: the batch was a retry of one already in the log; the
	// offsets are the original ones and nothing was stored.
	Duplicate bool
}

// Read is the outcome of Partition.Read.
type Read struct {
	// Records are stored batches, concatenated, exactly as stored: only
	// batches entirely below HighWatermark. Never nil: an empty read is an
	// empty, non-null record set on the wire (librdkafka refuses a null one
	// with "invalid MessageSetSize -1").
	Records          []byte
	HighWatermark    int64
	LogStartOffset   int64
	LastStableOffset int64
	// Aborted are the aborted transactions whose records Records may hold
	// (ReadCommitted only), by marker offset.
	Aborted []Aborted
}

// Partition is one topic partition: its log engine, producer state and high
// watermark. All methods are safe for concurrent use.
type Partition struct {
	topic string
	index int32
	key   Key
	dir   string
	fs    vfs.FS
	log   engine.LogEngine
	// readHint is about what the last pooled read took (readbuf.go): the
	// size of the next one's first buffer.
	readHint atomic.Int64
	logID    engine.LogID                // log's id in the data directory's store
	cfg      atomic.Pointer[topicConfig] // the topic's configs may change
	resized  bool                        // setConfig has given the log its segment size (Manager.Ensure serializes it)
	internal bool                        // an internal topic: never trimmed by retention
	always   bool                        // SyncAlways: what Open recovered is synced before it counts
	// shortOfHW is how many committed offsets the log lacked when it was
	// opened (its saved high watermark above its end), 0 normally.
	shortOfHW int64
	clock     clock.Clock
	logger    *slog.Logger
	failed    func(error) // Config.OnLogFailure, or nil

	// mu orders appends: the idempotence check, the offset assignment, the
	// engine append and the producer state update happen under it.
	mu        sync.Mutex
	closed    bool
	gone      atomic.Bool // closed, readable without mu
	producers *producer.State
	// verifying are the transactions' verifications under way (txn.go), by
	// producer id; guards numbers them.
	verifying map[int64]uint64
	guards    uint64
	// markerLanded is closed at the next marker appended (txn.go), nil
	// until someone waits for one.
	markerLanded chan struct{}
	// txnSeen: a transactional batch has been in the log since the
	// partition opened (or its snapshot says one was); until then reads
	// need not look at transactions. unstable mirrors
	// producers.Unstable(): 0 means the last stable offset is the high
	// watermark.
	txnSeen  atomic.Bool
	unstable atomic.Int64
	epoch    int32 // the leader epoch of the current role
	// self and brokerEpoch are this broker's id and the epoch the current
	// role was built with.
	self        int32
	brokerEpoch int64
	leader      bool  // this broker leads the partition (at epoch)
	leaderID    int32 // who leads it, as the metadata says (-1: nobody)
	// tenure is this broker's current leadership, nil while it does not
	// lead: produces waiting for the high watermark under it fail with
	// NOT_LEADER_OR_FOLLOWER once it ends.
	tenure *tenure

	// repMu guards the replication state machine (replica.go); taken after mu.
	repMu  sync.Mutex
	role   role
	epochs *replication.EpochCache
	// epochsDirty says the cache changed since its checkpoint was written,
	// epochsOnDisk that a checkpoint exists (flushEpochsLocked).
	epochsDirty, epochsOnDisk bool
	// epochsSeq numbers the checkpoint contents taken under repMu;
	// epochsFile, taken after repMu or alone, orders their writes, and
	// epochsWritten is the newest written (see saveFirstEpochs).
	epochsSeq     uint64
	epochsFile    sync.Mutex
	epochsWritten uint64
	// firstEpochsDue is when saveFirstEpochs may write a new partition's
	// first checkpoint (zero: not yet set).
	firstEpochsDue time.Time
	repl           Replication
	mut            mutations
	savedHW        int64 // the high watermark checkpoint's value
	// replBytesIn and replBytesOut count record bytes replicated into this
	// replica and served from it to followers.
	replBytesIn, replBytesOut atomic.Int64
	// fetchable wakes followers' fetches parked at this leader when the
	// log end moves or the role changes; its value is unused.
	fetchable watermark
	// starts wakes DeleteRecords waiters when the leader's low watermark
	// moved or the role changed; its value is the low watermark last seen
	// (noteLowLocked).
	starts watermark
	// leaderStart is the log start the leader's answers to followers give,
	// as of its last step (noteLowLocked): parked follower fetches read it
	// without the replication lock.
	leaderStart atomic.Int64
	sinceSnap   int64 // bytes appended since the last producer snapshot
	// snapSaved is the log end at which the newest producer snapshot on
	// disk is the producer state in memory (-1: none is), so that closing a
	// partition nothing was appended to since writes no file, and a log
	// start never passes every snapshot; rebuilds counts truncations,
	// after which a snapshot taken before one is not the state any more.
	// Both written under mu; snapSaved is read without it by retention,
	// which holds the time index's lock.
	snapSaved atomic.Int64
	rebuilds  uint64
	snapEvery int64 // Config.SnapshotBytes

	wm watermark
	// durable is how far the log's Sync has covered (under SyncAlways
	// synced; under the other policies out of the process's hands, so
	// that a kill -9 takes nothing acknowledged), moved by the background
	// loop; acks=1 waits on it so that its syncs are the loop's, not a
	// second stream of syncs beside them.
	durable watermark
	ti      timeIndex

	kick chan struct{} // wakes the background loop; capacity 1
	stop chan struct{} // closed by close: the background loop exits
	done chan struct{} // closed when the background loop has exited
}

// openPartition opens the partition on log, its log id of the store, and
// restores the producer state from the snapshot and the log after it. names
// is the listing of the partition's directory, where its checkpoints and
// snapshots are: one listing instead of a look for each (a broker reopens
// thousands of partitions, most of them without either). The partition
// owns log from then on, failed or not.
func openPartition(m *Manager, spec Spec, id engine.LogID, log engine.LogEngine, names []string) (*Partition, error) {
	fs := m.fs
	topic, index := spec.Topic, spec.Index
	dir := m.partitionDir(spec.Key())
	cfg := parseTopicConfig(spec.Configs)
	p := &Partition{
		topic: topic, index: index, key: spec.Key(), dir: dir, fs: fs, log: log, logID: id, repl: m.cfg.Replication, mut: m.cfg.mut,
		internal:  cluster.Internal(topic),
		always:    m.cfg.EngineOptions.Sync == engine.SyncAlways,
		clock:     m.cfg.Clock,
		snapEvery: m.cfg.SnapshotBytes,
		logger:    m.cfg.Logger.With("topic", topic, "partition", index),
		failed:    m.cfg.OnLogFailure,
		leaderID:  -1,
		kick:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	p.cfg.Store(&cfg)
	if err := p.restoreProducers(names); err != nil {
		log.Close()
		return nil, fmt.Errorf("partition %s-%d: %w", topic, index, err)
	}
	// What the engine recovered after a process crash may still be only in
	// the page cache; under SyncAlways it is made durable before it counts
	// as committed.
	end := log.EndOffset()
	if p.always {
		if err := log.Sync(context.Background(), end); err != nil {
			log.Close()
			return nil, fmt.Errorf("partition %s-%d: sync recovered log: %w", topic, index, err)
		}
	}
	p.durable.init(end)
	p.fetchable.init(0)
	p.starts.init(-1)
	p.wm.init(p.loadHW(end, m.savedHWs))
	if err := p.loadEpochs(names); err != nil {
		log.Close()
		return nil, fmt.Errorf("partition %s-%d: %w", topic, index, err)
	}
	if m.cfg.Manual {
		close(p.done) // no loop: the caller calls Sync
	} else {
		go p.loop()
	}
	return p, nil
}

// LogID is the partition's log in the data directory's store.
func (p *Partition) LogID() engine.LogID { return p.logID }

// Topic is the partition's topic name.
func (p *Partition) Topic() string { return p.topic }

// Key is the partition's topic id and index.
func (p *Partition) Key() Key { return p.key }

// setConfig applies the topic's (new) configs, which are dynamic: the
// limits and retention read them at each use, and an engine that keeps
// segment files rolls its next segment at the new segment.bytes (def when
// the topic sets none: the store's).
func (p *Partition) setConfig(cfg topicConfig, def int64) {
	old := p.cfg.Swap(&cfg)
	if old != nil && old.segmentBytes == cfg.segmentBytes && p.resized {
		return
	}
	if r, ok := engine.As[engine.SegmentResizer](p.log); ok {
		r.SetSegmentBytes(cmp.Or(cfg.segmentBytes, def))
	}
	p.resized = true
}

// Index is the partition number.
func (p *Partition) Index() int32 { return p.index }

// Append validates the batches in records, checks idempotence, assigns
// offsets, patches each batch's base offset and leader epoch in place and
// appends it to the engine. It returns once the batches are ordered in the
// log, not once they are durable: call WaitDurable or WaitHighWatermark with
// LastOffset+1 for that. A retry of a batch already in the log returns its
// original offsets with Duplicate set and stores nothing.
//
// records may hold several batches only if none is idempotent (Kafka allows
// one batch per partition in a produce; several plain batches are harmless).
// Errors wrap kerr values: CorruptMessage, InvalidRecord, MessageTooLarge,
// OutOfOrderSequenceNumber, InvalidProducerEpoch, KafkaStorageError, or
// NotLeaderForPartition once the partition is closed.
func (p *Partition) Append(records []byte) (Appended, error) {
	return p.appendGuarded(records, 0)
}

// appendGuarded is Append; guard is the verification a batch that opens a
// transaction comes with (AppendVerified), 0 for none.
func (p *Partition) appendGuarded(records []byte, guard uint64) (Appended, error) {
	parts, hs, err := p.validate(records)
	if err != nil {
		return Appended{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.leadingLocked(); err != nil {
		return Appended{}, err
	}
	if len(hs) == 1 {
		d, err := p.producers.Check(hs[0])
		if err != nil {
			return Appended{}, p.wrap(err)
		}
		if d.Duplicate {
			return Appended{
				BaseOffset: d.BaseOffset, LastOffset: d.LastOffset, LogAppendTime: -1,
				LogStartOffset: p.log.StartOffset(), Duplicate: true,
			}, nil
		}
		if d.StartsTxn && !p.mut.has(mutNoTxnVerify) {
			if err := p.takeGuardLocked(hs[0], guard); err != nil {
				return Appended{}, err
			}
		}
	}
	return p.appendLocked(parts, hs)
}

// leadingLocked is nil while the partition is open and this broker leads
// it; the caller holds mu.
func (p *Partition) leadingLocked() error {
	if p.closed {
		return p.closedErr()
	}
	if !p.leader {
		return p.wrap(fmt.Errorf("broker %d leads it: %w", p.leaderID, kerr.NotLeaderForPartition))
	}
	return nil
}

// appendLocked assigns offsets to the validated batches parts, whose
// headers are hs, and appends them; the caller holds mu and has checked
// the producer state.
func (p *Partition) appendLocked(parts [][]byte, hs []batch.Header) (Appended, error) {
	p.repMu.Lock()
	err := p.flushEpochsLocked()
	p.repMu.Unlock()
	if err != nil {
		return Appended{}, err
	}
	first := p.log.EndOffset()
	next := first
	nowMs := p.clock.Now().UnixMilli()
	for i, b := range parts {
		h := hs[i]
		batch.SetBaseOffset(b, next)
		batch.SetPartitionLeaderEpoch(b, p.epoch)
		if err := p.log.Append(engine.Batch{BaseOffset: next, Records: h.Offsets(), Data: b}); err != nil {
			// Earlier batches of the same request stay: they are in the log.
			p.afterAppend(next)
			return Appended{}, p.writeFailed("append", err)
		}
		if err := recordBatch(p.producers, b, h, next, nowMs); err != nil {
			p.afterAppend(next + int64(h.Offsets()))
			return Appended{}, p.wrap(err)
		}
		p.noteTxnsLocked(h)
		p.sinceSnap += int64(len(b))
		next += int64(h.Offsets())
	}
	p.afterAppend(next)
	return Appended{BaseOffset: first, LastOffset: next - 1, LogAppendTime: -1, LogStartOffset: p.log.StartOffset()}, nil
}

// validate splits and parses records and applies the size limits.
func (p *Partition) validate(records []byte) ([][]byte, []batch.Header, error) {
	parts, err := batch.Split(records)
	if err != nil {
		return nil, nil, p.wrap(err)
	}
	hs := make([]batch.Header, len(parts))
	for i, b := range parts {
		if limit := p.cfg.Load().maxMessageBytes; len(b) > limit {
			return nil, nil, p.wrap(fmt.Errorf("batch of %d bytes exceeds max.message.bytes %d: %w",
				len(b), limit, kerr.MessageTooLarge))
		}
		if hs[i], err = batch.Parse(b); err != nil {
			return nil, nil, p.wrap(err)
		}
		if len(parts) > 1 && hs[i].Idempotent() {
			return nil, nil, p.wrap(fmt.Errorf("%d batches in one produce, one of them idempotent: %w",
				len(parts), kerr.InvalidRecord))
		}
	}
	return parts, hs, nil
}

// afterAppend runs under mu once the log end moved to end, and wakes the
// background loop, which syncs the log and then moves the local durable
// end (and with it the HW), and writes a snapshot when one is due.
func (p *Partition) afterAppend(end int64) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	p.afterAppendLocked(end)
}

// afterAppendLocked is afterAppend for a caller that holds repMu too.
func (p *Partition) afterAppendLocked(end int64) {
	if l := p.role.leader; l != nil {
		p.applyLocked(l.Step(replication.LocalAppended{End: end}))
		p.fetchable.poke() // followers fetch up to the log end
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Read returns stored batches from the one holding offset, up to about
// maxBytes (at least one batch), all below the high watermark. An offset at
// or past the high watermark but not past the log end returns no records
// (a consumer at the tail); outside [StartOffset, EndOffset] returns
// kerr.OffsetOutOfRange. Corrupt stored data returns kerr.KafkaStorageError.
func (p *Partition) Read(offset int64, maxBytes int) (Read, error) {
	return p.ReadLeased(offset, maxBytes, nil)
}

// ReadLeased is Read into pooled memory that lease holds (bufpool): the
// records are valid until the lease is released. A nil lease is Read.
func (p *Partition) ReadLeased(offset int64, maxBytes int, lease *bufpool.Lease) (Read, error) {
	if p.gone.Load() {
		return Read{}, p.closedErr()
	}
	hw := p.wm.get()
	start, end := p.log.StartOffset(), p.log.EndOffset()
	r := Read{Records: []byte{}, HighWatermark: hw, LastStableOffset: p.lastStable(hw), LogStartOffset: start}
	if offset < start || offset > end {
		return r, p.wrap(fmt.Errorf("offset %d not in [%d, %d]: %w", offset, start, end, kerr.OffsetOutOfRange))
	}
	if offset >= hw {
		return r, nil
	}
	recs, err := p.readRecords(offset, maxBytes, hw, lease)
	if err != nil {
		return r, p.storageErr("read", err)
	}
	r.Records = recs
	return r, nil
}

// ReadLog returns the stored batches from the one holding offset, about
// maxBytes of them but at least one, as the engine holds them: whatever
// the high watermark. It is for tools that compare replicas byte for byte
// (the simulator's checkers); consumers use Read, followers ServeFollower.
func (p *Partition) ReadLog(offset int64, maxBytes int) ([]engine.Batch, error) {
	if p.gone.Load() {
		return nil, p.closedErr()
	}
	bs, err := p.log.Read(offset, maxBytes)
	if err != nil {
		return nil, p.storageErr("read", err)
	}
	return bs, nil
}

// ReadToEnd returns the stored batches from the one holding offset, about
// maxBytes of them but at least one, concatenated, up to the log end and
// not the high watermark: nothing at the end. It is what a coordinator
// (groups, transactions) replays its partition with when it loads: it
// loads when its broker becomes the leader, whose high watermark may not
// have caught up yet with what it holds (and will commit), as Kafka's
// coordinators load to the log end too.
func (p *Partition) ReadToEnd(offset int64, maxBytes int) ([]byte, error) {
	if offset >= p.log.EndOffset() {
		return nil, nil
	}
	bs, err := p.ReadLog(offset, maxBytes)
	if err != nil {
		return nil, err
	}
	return Concat(bs, math.MaxInt64), nil
}

// ShortOfHighWatermark is how many offsets below its saved high watermark
// the log lacked when it was opened: committed records lost (0 normally;
// possible only under sync=interval or never).
func (p *Partition) ShortOfHighWatermark() int64 { return p.shortOfHW }

// DurableEnd is how far the log is known durable: under SyncAlways what the
// last Sync (or the background loop) made durable, the log end otherwise.
func (p *Partition) DurableEnd() int64 { return p.durable.get() }

// HighWatermark is the offset below which records are committed: readable
// by consumers and acknowledged to acks=all producers.
func (p *Partition) HighWatermark() int64 { return p.wm.get() }

// StartOffset is the log start offset.
func (p *Partition) StartOffset() int64 { return p.log.StartOffset() }

// EndOffset is the log end offset: where the next batch goes.
func (p *Partition) EndOffset() int64 { return p.log.EndOffset() }

// LeaderEpoch is the partition's leader epoch, written into every batch
// this broker appends as its leader.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch
}

// Role is who leads a partition, at which leader epoch.
type Role struct {
	// Leader is the leading broker's id (-1: nobody).
	Leader      int32
	LeaderEpoch int32
	// Local: this broker is the leader.
	Local bool
}

// Role is the partition's current role.
func (p *Partition) Role() Role {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Role{Leader: p.leaderID, LeaderEpoch: p.epoch, Local: p.leader}
}

// ProducerState returns a copy of the partition's idempotent producer state.
func (p *Partition) ProducerState() *producer.State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.producers.Clone()
}

// wrap adds the partition's name to an error that already wraps a kerr value.
func (p *Partition) wrap(err error) error {
	return fmt.Errorf("partition %s-%d: %w", p.topic, p.index, err)
}

func (p *Partition) closedErr() error {
	return fmt.Errorf("partition %s-%d is closed: %w: %w", p.topic, p.index, kerr.NotLeaderForPartition, engine.ErrClosed)
}

// storageErr maps an engine error to the Kafka error a client can act on,
// keeping the engine error in the chain.
// writeFailed is storageErr for a write the engine (or a file beside it)
// refused: an I/O error (KAFKA_STORAGE_ERROR) is also reported to
// Config.OnLogFailure. Every write of the log goes through it, truncations
// and log start moves included: a failed engine refuses every later write,
// so a partition whose truncation failed would otherwise stay a dead
// follower in a broker that goes on running (Kafka takes the log directory
// offline on any write error, and a broker with one directory halts).
func (p *Partition) writeFailed(op string, err error) error {
	err = p.storageErr(op, err)
	if p.failed != nil && errors.Is(err, kerr.KafkaStorageError) {
		p.failed(err)
	}
	return err
}

func (p *Partition) storageErr(op string, err error) error {
	var code *kerr.Error
	switch {
	case errors.Is(err, engine.ErrClosed):
		return p.closedErr()
	case errors.Is(err, engine.ErrBatchTooLarge):
		code = kerr.MessageTooLarge
	case errors.Is(err, engine.ErrOffsetOutOfRange):
		code = kerr.OffsetOutOfRange
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		code = kerr.KafkaStorageError
	}
	return fmt.Errorf("partition %s-%d: %s: %w: %w", p.topic, p.index, op, code, err)
}

// close stops the background loop, closes the engine (which syncs) and
// writes the producer snapshot as of the log end. Waiters get
// NotLeaderForPartition.
func (p *Partition) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.gone.Store(true)
	p.repMu.Lock()
	if p.leader {
		p.endLeadership()
	}
	p.role = role{gen: p.role.gen + 1}
	p.leader = false
	p.repMu.Unlock()
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	end := p.log.EndOffset()
	p.mu.Lock()
	// An empty log with no producer state needs no snapshot: the open scans
	// nothing and finds the same. (A broker that made thousands of
	// partitions would otherwise sync a file for each on its way out.)
	empty := end == p.log.StartOffset()
	saved := p.snapSaved.Load() == end || (empty && p.producers.Len() == 0)
	p.mu.Unlock()
	err := p.log.Close()
	if err == nil && !saved {
		err = p.writeSnapshot(p.producers, end)
	}
	if err == nil {
		err = p.writeFirstEpochs(empty)
	}
	if err == nil {
	}
	p.wm.close(p.closedErr())
	p.durable.close(p.closedErr())
	p.fetchable.close(p.closedErr())
	p.starts.close(p.closedErr())
	if err != nil {
		return fmt.Errorf("partition %s-%d: close: %w", p.topic, p.index, err)
	}
	return nil
}

// syncDirs fsyncs each directory so that entries created in it survive a
// crash.
func syncDirs(fs vfs.FS, dirs ...string) error {
	for _, d := range dirs {
		if err := engine.SyncDir(fs, d); err != nil {
			return err
		}
	}
	return nil
}
