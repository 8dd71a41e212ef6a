package logbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minikafka/minikafka/engine"
)

// SegmentRetainedName names segment measured in retention's steady state.
const SegmentRetainedName = "segment-retained"

// SegmentRetainedSubject is the segment engine with default options in the
// state a log under retention lives in: retention drops its oldest segment
// as it writes one more, so every segment it starts is the spare, a file
// whose blocks were written before (see the engine's Recycling). Opening it
// writes two segments of filler and trims them (outside the measurement,
// as raw-overwrite's zeroing is), so that the active segment is recycled
// and a spare is waiting; while it is written, every quarter segment
// written drops every sealed segment. It keeps only its active segment, so,
// like raw-overwrite, it is not read back. segmentBytes is the roll size
// (the engine's default in the benchmark).
func SegmentRetainedSubject(segmentBytes int64) Subject {
	open := func(dir string) (*engineLog, error) {
		e, err := engine.Open("segment", dir, engine.Options{Sync: engine.SyncAlways, SegmentBytes: segmentBytes})
		if err != nil {
			return nil, err
		}
		l := &engineLog{e: e, next: e.EndOffset()}
		if err := l.prefill(dir, segmentBytes); err != nil {
			e.Close()
			return nil, err
		}
		l.retain = segmentBytes
		return l, nil
	}
	return Subject{
		Name:       SegmentRetainedName,
		Note:       "segment, sync=always, default options, in retention's steady state: segments recycled; not read back",
		Durable:    true,
		Overwrites: true,
		Writer:     func(dir string) (Writer, error) { return open(dir) },
		Ingester:   func(dir string) (Ingester, error) { return open(dir) },
	}
}

// retainFrameBytes is what engineLog.written counts for each batch beyond
// its data: about a frame's overhead, so that the count runs ahead of the
// file and never behind.
const retainFrameBytes = 64

// retainAfter runs under l.mu after an append of n bytes: every quarter of
// retain bytes it drops every sealed segment, which becomes the spare.
// That drops each sealed segment within a quarter segment of the roll that
// sealed it, long before the next roll needs the spare. (Retention that
// keeps more history drops the same segments later; what the active
// segment's writes cost is the same.)
func (l *engineLog) retainAfter(n int) error {
	l.written += int64(n + retainFrameBytes)
	if l.retain == 0 || l.written-l.markBytes < l.retain/4 {
		return nil
	}
	l.markBytes = l.written
	if err := l.e.DeleteBefore(l.next); err != nil {
		return fmt.Errorf("retention: delete before %d: %w", l.next, err)
	}
	return nil
}

// prefill writes filler until the log has rolled twice, dropping what
// lies before each new segment: the first roll starts a fresh file and
// leaves the first one as the spare, the second starts the spare renamed
// and leaves the second as the next spare.
func (l *engineLog) prefill(dir string, segmentBytes int64) error {
	const fillerRecords = 1024
	filler := make([]byte, min(1<<20, segmentBytes/16))
	deadline := time.Now().Add(5 * time.Minute)
	files, err := segmentFiles(dir)
	if err != nil {
		return err
	}
	for rolls := 0; rolls < 2; {
		if time.Now().After(deadline) {
			return fmt.Errorf("prefill: no roll after %d bytes", l.written)
		}
		end, err := l.append(filler, fillerRecords)
		if err != nil {
			return err
		}
		n, err := segmentFiles(dir)
		if err != nil {
			return err
		}
		if n <= files {
			continue
		}
		rolls++
		base := end - fillerRecords // the new segment starts with this batch
		if err := l.e.Sync(context.Background(), end); err != nil {
			return err
		}
		if err := l.e.DeleteBefore(base); err != nil {
			return fmt.Errorf("prefill: delete before %d: %w", base, err)
		}
		if files, err = segmentFiles(dir); err != nil {
			return err
		}
	}
	l.markBytes = l.written
	return nil
}

// segmentFiles counts the segment files of the log in dir.
func segmentFiles(dir string) (int, error) {
	var n int
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".log") {
			n++
		}
		return err
	})
	return n, err
}
