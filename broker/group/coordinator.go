package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/coordlog"
	"github.com/minikafka/minikafka/clock"
)

// Defaults for the zero fields of Config.
const (
	// DefaultInitialRebalanceDelay is group.initial.rebalance.delay.ms: a
	// group formed from Empty waits this long after its latest new member
	// before answering, so members started together land in one generation
	// instead of one rebalance each. Kafka's 3 s is tuned for slow-starting
	// JVM fleets; 250 ms lets a 10-member group settle well within 1 s of
	// its last JoinGroup.
	DefaultInitialRebalanceDelay = 250 * time.Millisecond
	// DefaultMinSessionTimeout and DefaultMaxSessionTimeout are Kafka's
	// group.min/max.session.timeout.ms.
	DefaultMinSessionTimeout = 6 * time.Second
	DefaultMaxSessionTimeout = 30 * time.Minute
	// DefaultMaxMembers is group.max.size. Kafka's is unlimited; a bound
	// keeps one group from holding unbounded memory.
	DefaultMaxMembers = 1000
	// DefaultMaxMetadataBytes bounds one member's protocol metadata in
	// JoinGroup (names plus metadata of all its protocols) and each
	// assignment in the leader's SyncGroup: INVALID_REQUEST above it.
	DefaultMaxMetadataBytes = 1 << 20
	// DefaultMaxGroupIDBytes bounds group ids: INVALID_GROUP_ID above it.
	// Kafka has no limit; ids go into every __consumer_offsets key.
	DefaultMaxGroupIDBytes = 1024
	// DefaultMaxOffsetMetadataBytes is Kafka's offset.metadata.max.bytes:
	// OFFSET_METADATA_TOO_LARGE above it.
	DefaultMaxOffsetMetadataBytes = 4096
	// DefaultOffsetsRetention is Kafka's offsets.retention.minutes: the
	// committed offsets of a group with no members expire this long after
	// it emptied (or after the commit, if later), so abandoned groups do
	// not accumulate forever.
	DefaultOffsetsRetention = 7 * 24 * time.Hour
)

// Config configures a Coordinator. Log is required; zero fields take the
// defaults above; a negative InitialRebalanceDelay or OffsetsRetention
// means none (no delay; offsets never expire); a negative CompactMinBytes
// turns compaction off.
type Config struct {
	Log    Log
	Clock  clock.Clock
	Logger *slog.Logger
	// PartitionExists reports whether a partition exists; OffsetCommit
	// answers UNKNOWN_TOPIC_OR_PARTITION for one that does not. Nil: all do.
	PartitionExists func(topic string, partition int32) bool
	// NewMemberID makes a member id for a new member. Nil: the client id, a
	// dash and a random UUID, as Kafka does.
	NewMemberID func(clientID string) string

	InitialRebalanceDelay  time.Duration
	MinSessionTimeout      time.Duration
	MaxSessionTimeout      time.Duration
	MaxMembers             int
	MaxMetadataBytes       int
	MaxGroupIDBytes        int
	MaxOffsetMetadataBytes int
	OffsetsRetention       time.Duration
	// CompactRatio and CompactMinBytes say when __consumer_offsets is
	// compacted (compact.go): once it holds CompactRatio records per live
	// key and at least CompactMinBytes of batches.
	CompactRatio    int
	CompactMinBytes int64

	// mut: the protections switched off (Mutate, mutations build only).
	mut mutations
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.PartitionExists == nil {
		c.PartitionExists = func(string, int32) bool { return true }
	}
	if c.NewMemberID == nil {
		c.NewMemberID = func(clientID string) string {
			if len(clientID) > 128 {
				clientID = clientID[:128]
			}
			return clientID + "-" + uuid.NewString()
		}
	}
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	}
	c.InitialRebalanceDelay = max(c.InitialRebalanceDelay, 0)
	if c.OffsetsRetention == 0 {
		c.OffsetsRetention = DefaultOffsetsRetention
	}
	c.OffsetsRetention = max(c.OffsetsRetention, 0)
	setDefault(&c.MinSessionTimeout, DefaultMinSessionTimeout)
	setDefault(&c.MaxSessionTimeout, DefaultMaxSessionTimeout)
	setDefault(&c.MaxMembers, DefaultMaxMembers)
	setDefault(&c.MaxMetadataBytes, DefaultMaxMetadataBytes)
	setDefault(&c.MaxGroupIDBytes, DefaultMaxGroupIDBytes)
	setDefault(&c.MaxOffsetMetadataBytes, DefaultMaxOffsetMetadataBytes)
	setDefault(&c.CompactRatio, DefaultCompactRatio)
	if c.CompactMinBytes == 0 {
		c.CompactMinBytes = DefaultCompactMinBytes
	}
	return c
}

func setDefault[T time.Duration | int](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Client is who sent a request: the client id from the request header and
// the remote host, shown by DescribeGroups.
type Client struct {
	ID   string
	Host string
}

// Coordinator is the shell around the per-group state machines: it owns
// the groups, serialises each group's steps, parks requests until the
// machine answers them, runs the machine's timers on the injected clock and
// writes what the machine asks to store to the log. Safe for concurrent use.
type Coordinator struct {
	cfg    Config
	set    Settings
	ctx    context.Context // ends when Close is done: durable waits stop
	cancel context.CancelFunc
	bg     sync.WaitGroup // store goroutines

	mu     sync.Mutex
	groups map[string]*entry
	closed bool
	// txnGroups are the groups with offsets pending in each producer's
	// transaction (txn.go).
	txnGroups map[int64]map[string]struct{}

	wmu        sync.Mutex
	waiters    map[Waiter]chan Reply
	nextWaiter Waiter

	lg *coordlog.Keyed // __consumer_offsets: every append goes through it
}

// entry is one group with its lock and timer. Lock order: entry.mu, then
// Coordinator.mu; entry.mu, then the Keyed log's lock.
type entry struct {
	mu      sync.Mutex
	g       *Group
	timer   clock.Timer
	timerAt time.Time
}

// Open replays cfg.Log and returns a coordinator serving the groups found
// there.
func Open(cfg Config) (*Coordinator, error) {
	if cfg.Log == nil {
		return nil, errors.New("group: Config.Log is required")
	}
	cfg = cfg.withDefaults()
	if cfg.MinSessionTimeout > cfg.MaxSessionTimeout {
		return nil, fmt.Errorf("group: min session timeout %v above the max %v", cfg.MinSessionTimeout, cfg.MaxSessionTimeout)
	}
	c := &Coordinator{
		cfg: cfg,
		set: Settings{
			InitialRebalanceDelay: cfg.InitialRebalanceDelay,
			MinSessionTimeout:     cfg.MinSessionTimeout,
			MaxSessionTimeout:     cfg.MaxSessionTimeout,
			MaxMembers:            cfg.MaxMembers,
			MaxMetadataBytes:      cfg.MaxMetadataBytes,
			OffsetsRetention:      cfg.OffsetsRetention,
		},
		groups:    map[string]*entry{},
		waiters:   map[Waiter]chan Reply{},
		txnGroups: map[int64]map[string]struct{}{},
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	found, err := replay(cfg.Log, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("group: load: %w", err)
	}
	c.lg = coordlog.NewKeyed(coordlog.KeyedConfig{
		Log: cfg.Log, Clock: cfg.Clock, Logger: cfg.Logger, Name: "__consumer_offsets",
		CompactRatio: cfg.CompactRatio, CompactMinBytes: cfg.CompactMinBytes,
	}, coordlog.Loaded{Live: found.live, Start: found.start, End: found.end, Bytes: found.bytes})
	for pid, off := range found.txnFirst {
		c.lg.Pin(pid, off)
	}
	now := cfg.Clock.Now()
	for id, l := range found.groups {
		c.groups[id] = &entry{g: restoreGroup(id, l, c.set, now)}
	}
	for pid, recs := range found.txns {
		for id, commits := range pendingCommits(recs) {
			e := c.groups[id]
			if e == nil {
				e = &entry{g: NewGroup(id, c.set, now)}
				c.groups[id] = e
			}
			e.g.txnPending(pid, commits)
			if c.txnGroups[pid] == nil {
				c.txnGroups[pid] = map[string]struct{}{}
			}
			c.txnGroups[pid][id] = struct{}{}
		}
	}
	for _, e := range c.groups {
		e.mu.Lock()
		c.reschedule(e)
		e.mu.Unlock()
	}
	cfg.Logger.Info("group coordinator loaded", "groups", len(found.groups),
		"log_start", found.start, "log_end", found.end, "log_bytes", found.bytes, "live_keys", len(found.live))
	return c, nil
}

// Close answers every parked request with COORDINATOR_NOT_AVAILABLE, waits
// for the stores under way and stops the timers. Later calls answer
// COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.lg.Close() // a compaction under way stops at its next batch or wait
	entries := make([]*entry, 0, len(c.groups))
	for _, e := range c.groups {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	now := c.cfg.Clock.Now()
	for _, e := range entries {
		e.mu.Lock()
		e.g.Shutdown(now, kerr.CoordinatorNotAvailable.Code)
		c.finish(e, now)
		if e.timer != nil {
			e.timer.Stop()
		}
		e.mu.Unlock()
	}
	c.bg.Wait()
	c.cancel()
	return nil
}

// lookup returns the group's entry, creating it if create; nil if the
// group does not exist (and !create) or the coordinator is closed.
func (c *Coordinator) lookup(id string, create bool) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	e := c.groups[id]
	if e == nil && create {
		e = &entry{g: NewGroup(id, c.set, c.cfg.Clock.Now())}
		c.groups[id] = e
	}
	return e
}

// step runs fn on the group's machine under its lock, then carries out what
// the machine asked. It returns the entry fn ran on, or nil if the group
// does not exist (and !create) or the coordinator is closed.
func (c *Coordinator) step(id string, create bool, fn func(g *Group, now time.Time)) *entry {
	for {
		e := c.lookup(id, create)
		if e == nil {
			return nil
		}
		e.mu.Lock()
		if e.g.State() == Dead {
			// Removed from the map while we waited for the lock: a Dead
			// group is never reused, look again.
			e.mu.Unlock()
			continue
		}
		now := c.cfg.Clock.Now()
		fn(e.g, now)
		c.finish(e, now)
		e.mu.Unlock()
		return e
	}
}

// finish carries out the machine's Ready, then re-arms the group's timer or
// drops the group if nothing in it is worth keeping. e.mu is held.
func (c *Coordinator) finish(e *entry, now time.Time) {
	rd := e.g.Ready()
	for _, r := range rd.Replies {
		c.deliver(r)
	}
	for _, s := range rd.Stores {
		c.startStore(e, s, now)
	}
	if e.g.Disposable() {
		c.mu.Lock()
		if c.groups[e.g.ID()] == e {
			delete(c.groups, e.g.ID())
		}
		c.mu.Unlock()
		if e.timer != nil {
			e.timer.Stop()
		}
		return
	}
	c.reschedule(e)
}

func (c *Coordinator) reschedule(e *entry) {
	at := e.g.NextDeadline()
	if at.Equal(e.timerAt) {
		return
	}
	e.timerAt = at
	if at.IsZero() {
		if e.timer != nil {
			e.timer.Stop()
		}
		return
	}
	d := at.Sub(c.cfg.Clock.Now())
	if e.timer == nil {
		e.timer = c.cfg.Clock.AfterFunc(d, func() { c.tick(e) })
		return
	}
	e.timer.Reset(d)
}

func (c *Coordinator) tick(e *entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.g.State() == Dead {
		return
	}
	now := c.cfg.Clock.Now()
	e.timerAt = time.Time{}
	e.g.Tick(now)
	c.finish(e, now)
}

// startStore appends s to the log (in step order: e.mu is held) and
// answers s.Replies once it is durable, in the background.
func (c *Coordinator) startStore(e *entry, s Store, now time.Time) {
	end, err := c.append(s.Records, now)
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		if err == nil {
			err = c.cfg.Log.WaitDurable(c.ctx, end)
		}
		if err == nil {
			for _, r := range s.Replies {
				c.deliver(r)
			}
			return
		}
		c.cfg.Logger.Warn("group: store failed", "group", e.g.ID(), "err", err)
		code := coordlog.ErrorCode(err)
		e.mu.Lock()
		e.g.StoreFailed(c.cfg.Clock.Now(), s)
		c.finish(e, c.cfg.Clock.Now())
		e.mu.Unlock()
		for _, r := range s.Replies {
			r.Code = code
			if r.Join != nil {
				r.Join = &JoinResult{MemberID: r.Join.MemberID, Generation: -1}
			}
			if r.Sync != nil {
				r.Sync = &SyncResult{}
			}
			c.deliver(r)
		}
	}()
}

func (c *Coordinator) newWaiter() (Waiter, chan Reply) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nextWaiter++
	ch := make(chan Reply, 1)
	c.waiters[c.nextWaiter] = ch
	return c.nextWaiter, ch
}

func (c *Coordinator) forget(w Waiter) {
	c.wmu.Lock()
	delete(c.waiters, w)
	c.wmu.Unlock()
}

func (c *Coordinator) deliver(r Reply) {
	c.wmu.Lock()
	ch := c.waiters[r.Waiter]
	delete(c.waiters, r.Waiter)
	c.wmu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// await waits for w's reply. If ctx ends first (the client went away) the
// machine still answers w later, into a buffer nobody reads.
func await(ctx context.Context, ch chan Reply) (Reply, bool) {
	select {
	case r := <-ch:
		return r, true
	case <-ctx.Done():
		return Reply{}, false
	}
}

// ValidGroupID reports whether id is an acceptable group id; allowEmpty for
// the APIs where Kafka accepts "" (OffsetCommit, OffsetFetch,
// DescribeGroups, DeleteGroups).
func (c *Coordinator) ValidGroupID(id string, allowEmpty bool) bool {
	return len(id) <= c.cfg.MaxGroupIDBytes && (allowEmpty || id != "")
}

// TopicDeleted forgets every offset committed for topic, in every group,
// and writes their tombstones (a topic created again under the same name
// must not inherit them).
func (c *Coordinator) TopicDeleted(topic string) {
	for _, id := range c.groupIDs() {
		c.step(id, false, func(g *Group, _ time.Time) { g.DropTopic(topic) })
	}
}

func (c *Coordinator) groupIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
