package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"

	"github.com/minikafka/minikafka/engine"
)

// The crash model. A broker's disk is a crashable pebble MemFS, for the
// small files (the quorum's META, HARDSTATE, SNAPSHOT; the partitions'
// partition.meta, checkpoints and producer snapshots: all written with
// fsync and rename, so CrashClone keeps exactly what the product's atomic
// writes promise), and crash-model logs for the raft log and the
// partitions, opened through the engine registry. A log keeps what was
// synced; a power loss keeps a seeded share of the unsynced tail (a
// prefix: files are written in order), and the last write it keeps may be
// torn, which the next open's recovery finds and cuts, as every engine's
// does. Disk faults: a sync that fails (EIO: the broker halts, as Kafka
// does when its log directory fails), a full disk (partition appends
// refused with ENOSPC for a while) and slow syncs (the sync's completion is
// an event the simulator schedules late).

// EngineName is the engine the quorum's raft log and the partitions open
// through the registry: a crash-model log of the broker whose FS it is
// given.
const EngineName = "sim-crash"

func init() {
	engine.Register(engine.Driver{
		Name: EngineName,
		Caps: engine.Capabilities{CustomFS: true, Durable: true},
		Open: func(dir string, opts engine.Options) (engine.LogEngine, error) {
			fs, ok := opts.FS.(*diskFS)
			if !ok {
				return nil, fmt.Errorf("sim: engine %s needs a simulated disk, not %T", EngineName, opts.FS)
			}
			if err := engine.ClaimDir(fs, dir, EngineName); err != nil {
				return nil, err
			}
			c := fs.disk.open(dir)
			c.partition = strings.HasPrefix(dir, dataDir+"/")
			c.opts = opts.WithDefaults()
			return c, nil
		},
	})
}

// dataDir is the partition manager's directory on every broker's disk.
const dataDir = "/data"

// diskFS is the broker's MemFS, carrying its disk so that the registered
// engine finds the logs that survived. Removing or renaming a directory
// removes or moves the logs under it too, as it would an engine's files.
type diskFS struct {
	vfs.FS
	disk *disk
}

func (f *diskFS) RemoveAll(name string) error {
	f.disk.moveLogs(name, "")
	return f.FS.RemoveAll(name)
}

func (f *diskFS) Rename(oldname, newname string) error {
	if err := f.FS.Rename(oldname, newname); err != nil {
		return err
	}
	f.disk.moveLogs(oldname, newname)
	return nil
}

var (
	errDiskFull = errors.New("sim: no space left on device")
	errDiskIO   = errors.New("sim: input/output error")
)

// disk is one broker's storage across its incarnations.
type disk struct {
	mem     *vfs.MemFS
	logs    map[string]*logState // by directory
	handles []*crashLog          // handles of the running incarnation: a crash closes them
	segs    map[string]*segLog   // the running incarnation's segment logs, by directory
	// crashedEnds are the segment logs' ends at the last power loss, to
	// count what their recovery cut.
	crashedEnds map[string]int64
	full        bool // partition appends fail with errDiskFull
	fail        bool // the next sync fails with errDiskIO
	stats       *Stats
	id          uuid.UUID // the partitions' directory id (a broker's log.dir.id)
	// mu serializes the logs' calls: one goroutine in the simulator, any
	// number in the conformance suite.
	mu sync.Mutex
}

func newDisk(stats *Stats, rng *rand.Rand) *disk {
	d := &disk{mem: vfs.NewCrashableMem(), logs: map[string]*logState{}, segs: map[string]*segLog{}, stats: stats, id: newID(rng)}
	_ = d.mem.MkdirAll("/", 0o755)
	return d
}

func (d *disk) fs() vfs.FS { return &diskFS{FS: d.mem, disk: d} }

// logState is what a log holds on the disk: batches in offset order, the
// first synced of them durable.
type logState struct {
	start   int64
	batches []engine.Batch
	synced  int  // batches[:synced] are durable
	torn    bool // the last batch is torn (after a crash, until the open cuts it)
}

func (l *logState) end() int64 {
	if len(l.batches) == 0 {
		return l.start
	}
	return l.batches[len(l.batches)-1].NextOffset()
}

func (l *logState) syncedEnd() int64 {
	if l.synced == 0 {
		return l.start
	}
	return l.batches[l.synced-1].NextOffset()
}

// crash is a power loss: the MemFS keeps what was synced plus a share of
// the rest; every log keeps its synced batches and a prefix of the others,
// the last of them torn with probability tornPct.
func (d *disk) crash(rng *rand.Rand, unsyncedPct, tornPct int) {
	for _, c := range d.handles {
		c.closed = true // the process is gone: nothing more reaches the disk through it
	}
	d.handles = nil
	d.crashedEnds = map[string]int64{}
	for dir, l := range d.segs { // the outcome does not depend on the order
		d.crashedEnds[dir] = l.Engine.EndOffset()
	}
	d.segs = map[string]*segLog{} // the process is gone; the clone below is what segment recovers
	// pebble's CrashClone keeps a share of unsynced blocks drawn in map
	// order, which would not replay: it keeps exactly what was synced, and
	// keepUnsynced adds the unsynced tails' prefixes in name order.
	old := d.mem
	d.mem = old.CrashClone(vfs.CrashCloneCfg{})
	d.keepUnsynced(old, "/", rng, unsyncedPct, tornPct)
	for _, dir := range slices.Sorted(maps.Keys(d.logs)) {
		l := d.logs[dir]
		unsynced := len(l.batches) - l.synced
		keep := 0
		for keep < unsynced && rng.IntN(100) < unsyncedPct {
			keep++
		}
		l.batches = l.batches[:l.synced+keep]
		if keep > 0 && rng.IntN(100) < tornPct {
			l.torn = true
			d.stats.Torn++
		}
		d.stats.LostBatches += unsynced - keep
	}
	d.full, d.fail = false, false
}

// durableLog is a partition's log on a disk and the end below which it is
// durable.
type durableLog struct {
	log    logReader
	synced int64
}

// partitionLog is the log of store id id on the disk's partition store
// (partition.Partition.LogID), for the checkers.
func (d *disk) partitionLog(id engine.LogID) (durableLog, bool) {
	dir := dataDir + "/store/" + id.String()
	if l, ok := d.segs[dir]; ok {
		return durableLog{l, l.synced}, true
	}
	if l, ok := d.logs[dir]; ok {
		return durableLog{stateReader{l}, l.syncedEnd()}, true
	}
	return durableLog{}, false
}

// stateReader reads a crash-model log as the checkers read a replica's.
type stateReader struct{ l *logState }

func (r stateReader) StartOffset() int64 { return r.l.start }
func (r stateReader) EndOffset() int64   { return r.l.end() }
func (r stateReader) ReadLog(offset int64, maxBytes int) ([]engine.Batch, error) {
	if err := engine.CheckReadOffset(offset, r.l.start, r.l.end()); err != nil {
		return nil, err
	}
	i := sort.Search(len(r.l.batches), func(i int) bool { return r.l.batches[i].NextOffset() > offset })
	return engine.CopyBatches(r.l.batches, i, maxBytes), nil
}

// syncPartitions syncs every partition log: sync=interval's flusher.
func (d *disk) syncPartitions() {
	for _, c := range d.handles {
		if c.partition && !c.closed {
			c.l.synced = len(c.l.batches)
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(d.segs)) {
		if l := d.segs[dir]; l.partition {
			_ = l.Flush() // a closed log has nothing to flush; a failed one halts at its next Sync or Append
		}
	}
}

// keepUnsynced walks dir of the crashed disk old in name order and gives
// each file the clone kept a prefix of what old held past its synced
// length, with probability unsyncedPct: whole 4 KiB blocks, or, torn, any
// number of bytes. Files are written in order, so what a power loss keeps
// of an appended tail is a prefix of it; a file or name never synced stays
// lost, as in the clone.
func (d *disk) keepUnsynced(old *vfs.MemFS, dir string, rng *rand.Rand, unsyncedPct, tornPct int) {
	names, err := d.mem.List(dir)
	if err != nil {
		return
	}
	sort.Strings(names)
	for _, n := range names {
		path := d.mem.PathJoin(dir, n)
		st, err := d.mem.Stat(path)
		if err != nil {
			continue
		}
		if st.IsDir() {
			d.keepUnsynced(old, path, rng, unsyncedPct, tornPct)
			continue
		}
		cur, err := readAll(old, path)
		if err != nil || int64(len(cur)) <= st.Size() || rng.IntN(100) >= unsyncedPct {
			continue
		}
		tail := cur[st.Size():]
		keep := rng.IntN(len(tail) + 1)
		if rng.IntN(100) >= tornPct {
			keep -= keep % 4096
		}
		if keep == 0 {
			continue
		}
		f, err := d.mem.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			continue
		}
		if _, err := f.WriteAt(tail[:keep], st.Size()); err == nil {
			_ = f.Sync()
			d.stats.Faults["unsynced-file-tail-kept"]++
		}
		_ = f.Close()
	}
}

func readAll(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// lose is a disk replaced after a crash: the partitions' data directory
// is gone (the quorum's, on another disk, is kept), and the new one has an
// id of its own.
func (d *disk) lose(rng *rand.Rand) {
	_ = d.mem.RemoveAll(dataDir)
	d.moveLogs(dataDir, "")
	d.crashedEnds = nil // the new disk's logs are new
	d.id = newID(rng)
}

// open recovers the log in dir: a torn tail is cut, and what is kept is
// synced (an engine fsyncs what it recovered before it says so).
func (d *disk) open(dir string) *crashLog {
	l, ok := d.logs[dir]
	if !ok {
		l = &logState{}
		d.logs[dir] = l
	}
	if l.torn {
		l.batches = l.batches[:len(l.batches)-1]
		l.torn = false
	}
	l.synced = len(l.batches)
	c := &crashLog{d: d, l: l}
	d.handles = append(d.handles, c)
	return c
}

// moveLogs moves the logs in dir and below it to to, or drops them when to
// is "" (the directory was removed).
func (d *disk) moveLogs(dir, to string) {
	var moved []string
	for k := range d.logs { // the outcome does not depend on the order
		if k == dir || strings.HasPrefix(k, dir+"/") {
			moved = append(moved, k)
		}
	}
	for _, k := range moved {
		if to != "" {
			d.logs[to+k[len(dir):]] = d.logs[k]
		}
		delete(d.logs, k)
	}
	moved = moved[:0]
	for k := range d.segs {
		if k == dir || strings.HasPrefix(k, dir+"/") {
			moved = append(moved, k)
		}
	}
	for _, k := range moved {
		if to != "" {
			d.segs[to+k[len(dir):]] = d.segs[k]
		}
		delete(d.segs, k)
	}
}

// crashLog is an engine.LogEngine over a logState: the contract's offsets
// and errors, with durability only at Sync (under sync=interval the
// simulator calls it on its clock; there is no flusher of its own), each
// sync round told to the Observer.
type crashLog struct {
	d         *disk
	l         *logState
	opts      engine.Options
	partition bool // a partition's log: a full disk refuses its appends
	closed    bool
}

// syncTo makes the batches up to to durable, as one round told to the
// Observer, timed on the engine's clock (the simulator gives none: its
// logs are watched by the checkers, not an Observer).
func (c *crashLog) syncTo(to int) {
	var ev engine.SyncEvent
	var start time.Time
	if c.opts.Observer != nil {
		start = c.opts.Clock.Now()
	}
	for ; c.l.synced < to; c.l.synced++ {
		ev.Batches++
		ev.Bytes += int64(len(c.l.batches[c.l.synced].Data))
	}
	if ev.Batches > 0 && c.opts.Observer != nil {
		ev.Duration = c.opts.Clock.Now().Sub(start)
		c.opts.Observer.Synced(ev)
	}
}

var _ engine.LogEngine = (*crashLog)(nil)

func (c *crashLog) Append(b engine.Batch) error {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if err := b.Validate(c.opts.MaxBatchBytes); err != nil {
		return err
	}
	switch {
	case c.closed:
		return engine.ErrClosed
	case b.BaseOffset != c.l.end():
		return fmt.Errorf("%w: base %d, end %d", engine.ErrNotContiguous, b.BaseOffset, c.l.end())
	case c.d.full && c.partition:
		c.d.stats.Faults["disk-full-refusal"]++
		return errDiskFull
	}
	b.Data = append([]byte(nil), b.Data...)
	c.l.batches = append(c.l.batches, b)
	return nil
}

// Sync makes everything below end durable at once; the simulator decides
// when it is called (a slow sync is a late call).
func (c *crashLog) Sync(_ context.Context, end int64) error {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.closed {
		return engine.ErrClosed
	}
	if c.l.synced == len(c.l.batches) || c.l.batches[c.l.synced].BaseOffset >= end {
		return nil // nothing to sync: no fsync, so no failing one
	}
	if c.d.fail {
		c.d.fail = false
		if c.opts.Observer != nil {
			c.opts.Observer.Synced(engine.SyncEvent{Err: errDiskIO})
		}
		return errDiskIO
	}
	to := c.l.synced
	for to < len(c.l.batches) && c.l.batches[to].BaseOffset < end {
		to++
	}
	c.syncTo(to)
	return nil
}

func (c *crashLog) find(offset int64) int {
	return sort.Search(len(c.l.batches), func(i int) bool { return c.l.batches[i].NextOffset() > offset })
}

func (c *crashLog) Read(offset int64, maxBytes int) ([]engine.Batch, error) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.closed {
		return nil, engine.ErrClosed
	}
	if err := engine.CheckReadOffset(offset, c.l.start, c.l.end()); err != nil {
		return nil, err
	}
	return engine.CopyBatches(c.l.batches, c.find(offset), maxBytes), nil
}

// Truncate is durable when it returns, as the contract says.
func (c *crashLog) Truncate(offset int64) error {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.closed {
		return engine.ErrClosed
	}
	if offset < c.l.start || offset > c.l.end() {
		return fmt.Errorf("%w: truncate to %d, log is [%d, %d]", engine.ErrOffsetOutOfRange, offset, c.l.start, c.l.end())
	}
	i := c.find(offset)
	c.l.batches = c.l.batches[:i]
	c.l.synced = min(c.l.synced, i)
	return nil
}

func (c *crashLog) DeleteBefore(offset int64) error {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.closed {
		return engine.ErrClosed
	}
	if offset <= c.l.start {
		return nil
	}
	if offset > c.l.end() {
		c.l.batches, c.l.synced, c.l.start = nil, 0, offset
		return nil
	}
	i := c.find(offset)
	c.l.batches = append([]engine.Batch(nil), c.l.batches[i:]...)
	c.l.synced = max(0, c.l.synced-i)
	c.l.start = offset
	return nil
}

func (c *crashLog) StartOffset() int64 {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	return c.l.start
}

func (c *crashLog) EndOffset() int64 {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	return c.l.end()
}

// durableEnd is what a crash now would keep for sure.
func (c *crashLog) durableEnd() int64 { return c.l.syncedEnd() }

// Close syncs, as the contract says (a clean shutdown).
func (c *crashLog) Close() error {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.closed {
		return engine.ErrClosed
	}
	c.syncTo(len(c.l.batches))
	c.closed = true
	return nil
}

// newID is a random id from rng.
func newID(rng *rand.Rand) uuid.UUID {
	var id uuid.UUID
	for i := range id {
		id[i] = byte(rng.Uint32())
	}
	return id
}
