package sim

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/segment"
)

// The real engine in the simulator. With Options.Engine "segment" the
// partitions' logs are the product's segment engine, opened Inline (no
// flusher goroutine: Sync fsyncs on the simulator's goroutine, and the
// broker's interval flush is the simulator's Flush of every open log) on
// the broker's crashable MemFS. A power loss is then the MemFS's
// CrashClone: synced bytes stay, a seeded share of the unsynced ones too,
// and the next open runs segment's own recovery (torn frames, zeroed or
// recycled tails, index checkpoints) on what is left. The quorum's raft
// log stays on the crash model. Disk faults are those of the crash model:
// a full disk refuses a partition's appends, a failing sync fails it.

// SegmentEngineName is the simulator's registration of the segment engine.
const SegmentEngineName = "sim-segment"

// simSegmentBytes is the segment size on the simulated disk: small, so
// that schedules roll segments, seal their indexes and retention drops
// whole files.
const simSegmentBytes = 4 << 10

// segmentOnDisk is the segment engine as the simulator opens it: under
// segment's own name, so that the store and its logs on the disk are
// exactly the product's.
var segmentOnDisk = engine.Driver{
	Name: segment.Name,
	Caps: engine.Capabilities{CustomFS: true, Durable: true, Inline: true},
	Open: func(dir string, opts engine.Options) (engine.LogEngine, error) {
		fs, ok := opts.FS.(*diskFS)
		if !ok {
			return nil, fmt.Errorf("sim: engine %s needs a simulated disk, not %T", SegmentEngineName, opts.FS)
		}
		opts.Inline, opts.SegmentBytes = true, simSegmentBytes
		opts.Logger = slog.New(noticeCounter{fs.disk.stats})
		e, err := segment.Open(dir, opts)
		if err != nil {
			return nil, err
		}
		l := &segLog{Engine: e, d: fs.disk, partition: strings.HasPrefix(dir, dataDir+"/"),
			always: opts.Sync == engine.SyncAlways, synced: e.EndOffset()}
		if end, ok := fs.disk.crashedEnds[dir]; ok && e.EndOffset() < end {
			fs.disk.stats.Faults["segment-tail-cut"]++ // the unsynced tail a power loss took, as recovery found it
		}
		delete(fs.disk.crashedEnds, dir)
		fs.disk.segs[dir] = l
		return l, nil
	},
}

func init() {
	d := segmentOnDisk
	d.Name = SegmentEngineName
	d.OpenStore = func(dir string, opts engine.Options) (engine.Store, error) {
		return engine.OpenDirStore(segmentOnDisk, dir, opts)
	}
	engine.Register(d)
}

// segLog is a segment engine on a broker's disk, with the end below which
// its log is durable (what a power loss now keeps for sure), for the
// checkers, and the crash model's disk faults.
type segLog struct {
	*segment.Engine
	d         *disk
	partition bool
	always    bool  // SyncAlways: a Sync syncs (else only Flush and Close do)
	synced    int64 // the log below it is durable
}

func (l *segLog) Append(b engine.Batch) error {
	if l.d.full && l.partition {
		l.d.stats.Faults["disk-full-refusal"]++
		return errDiskFull
	}
	return l.Engine.Append(b)
}

func (l *segLog) Sync(ctx context.Context, end int64) error {
	if l.Engine.EndOffset() > l.synced && l.d.fail {
		l.d.fail = false
		return errDiskIO
	}
	before := l.Engine.EndOffset()
	if err := l.Engine.Sync(ctx, end); err != nil {
		return err
	}
	if l.always {
		l.synced = max(l.synced, before)
	}
	return nil
}

// Flush is the broker's interval flusher's round.
func (l *segLog) Flush() error {
	before := l.Engine.EndOffset()
	if err := l.Engine.Flush(); err != nil {
		return err
	}
	l.synced = max(l.synced, before)
	return nil
}

func (l *segLog) Truncate(offset int64) error {
	if err := l.Engine.Truncate(offset); err != nil {
		return err
	}
	l.synced = min(l.synced, offset)
	return nil
}

func (l *segLog) Close() error {
	before := l.Engine.EndOffset()
	if err := l.Engine.Close(); err != nil {
		return err
	}
	l.synced = max(l.synced, before)
	return nil
}

// ReadLog reads the log for the checkers (a logReader).
func (l *segLog) ReadLog(offset int64, maxBytes int) ([]engine.Batch, error) {
	return l.Engine.Read(offset, maxBytes)
}

// noticeCounter counts the engine's warnings by message among the faults,
// so that a report shows how often segment's recovery cut a torn or
// unsynced tail ("segment: cutting the log after a crash").
type noticeCounter struct{ stats *Stats }

func (n noticeCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (n noticeCounter) Handle(_ context.Context, r slog.Record) error {
	n.stats.Faults["segment: "+r.Message]++
	return nil
}
func (n noticeCounter) WithAttrs([]slog.Attr) slog.Handler { return n }
func (n noticeCounter) WithGroup(string) slog.Handler      { return n }
