package crashtest

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// expect is what a recovered log may look like after a crash.
type expect struct {
	// batches is every batch that may be in the recovered log, contiguous and
	// in order. Batches the log held before a Truncate that returned nil are
	// not in it: they must never come back.
	batches []engine.Batch
	// startLo and startHi bound the recovered StartOffset: equal unless a
	// DeleteBefore was in flight when the power went out.
	startLo, startHi int64
	// acked: a Sync (or Close) returned nil for every offset below it, so the
	// recovered EndOffset must be at least acked and every batch below it must
	// be there, byte for byte.
	acked int64
	// strict: the recovered log may hold only batches listed in batches. The
	// kill model turns it off: a killed child leaves batches it never got to
	// acknowledge, and those are fine as long as they are whole and ours.
	strict bool
}

func (x expect) end() int64 {
	if len(x.batches) == 0 {
		return x.startHi
	}
	return max(x.startHi, x.batches[len(x.batches)-1].NextOffset())
}

// truncated is x after Truncate(off) returned nil.
func (x expect) truncated(off int64) expect {
	i := sort.Search(len(x.batches), func(i int) bool { return x.batches[i].NextOffset() > off })
	x.batches = x.batches[:i:i]
	x.acked = min(x.acked, max(x.startHi, x.end()))
	return x
}

// recovered is what a reopened engine says about its log.
type recovered struct {
	start, end int64
	batches    []engine.Batch
}

// readLog reads the whole log from StartOffset and reports every way the
// reading itself breaks the contract: read errors (ErrCorrupt above all),
// gaps, bytes that are not what the suite wrote.
func readLog(e engine.LogEngine) (recovered, []string) {
	r := recovered{start: e.StartOffset(), end: e.EndOffset()}
	var bad []string
	if r.end < r.start {
		return r, []string{fmt.Sprintf("EndOffset %d is below StartOffset %d", r.end, r.start)}
	}
	off := r.start
	for off < r.end {
		bs, err := e.Read(off, 64<<10)
		switch {
		case errors.Is(err, engine.ErrCorrupt):
			return r, append(bad, fmt.Sprintf("Read(%d) in [start %d, end %d) returned ErrCorrupt: a torn or unsynced tail was not cut on open (%v)", off, r.start, r.end, err))
		case err != nil:
			return r, append(bad, fmt.Sprintf("Read(%d) in [start %d, end %d) failed: %v", off, r.start, r.end, err))
		case len(bs) == 0:
			return r, append(bad, fmt.Sprintf("Read(%d) below the end %d returned no batch", off, r.end))
		}
		for _, b := range bs {
			if b.BaseOffset > off || b.NextOffset() <= off {
				return r, append(bad, fmt.Sprintf("offsets are not contiguous: expected the batch holding %d, got base %d (%d records)", off, b.BaseOffset, b.Records))
			}
			if err := enginetest.Check(b); err != nil {
				bad = append(bad, fmt.Sprintf("a batch read back is not what was written: %v", err))
			}
			r.batches = append(r.batches, b)
			off = b.NextOffset()
		}
	}
	if off != r.end {
		bad = append(bad, fmt.Sprintf("the last batch ends at %d but EndOffset is %d", off, r.end))
	}
	return r, bad
}

// maxMissing caps how many missing batches a report lists one by one.
const maxMissing = 5

// compare reports every way r differs from what x allows.
func compare(r recovered, x expect) []string {
	var bad []string
	if r.start < x.startLo || r.start > x.startHi {
		if x.startLo == x.startHi {
			bad = append(bad, fmt.Sprintf("StartOffset is %d, want %d", r.start, x.startLo))
		} else {
			bad = append(bad, fmt.Sprintf("StartOffset is %d, want one of %d (before the DeleteBefore in flight) .. %d (after it)", r.start, x.startLo, x.startHi))
		}
	}
	if r.end < x.acked {
		bad = append(bad, fmt.Sprintf("EndOffset is %d but a Sync returned nil for every offset below %d: acknowledged data lost", r.end, x.acked))
	}
	if x.strict && r.end > x.end() {
		bad = append(bad, fmt.Sprintf("EndOffset is %d, past %d, the end of everything the workload ever kept", r.end, x.end()))
	}
	missing := 0
	byBase := make(map[int64]engine.Batch, len(r.batches))
	for _, b := range r.batches {
		byBase[b.BaseOffset] = b
	}
	want := make(map[int64]bool, len(x.batches))
	for _, w := range x.batches {
		want[w.BaseOffset] = true
		if w.NextOffset() <= r.start {
			continue // deleted: below the recovered start
		}
		got, ok := byBase[w.BaseOffset]
		switch {
		case !ok && w.NextOffset() <= x.acked:
			if missing++; missing <= maxMissing {
				bad = append(bad, fmt.Sprintf("acknowledged batch %s is missing", describe(w)))
			}
		case !ok && w.BaseOffset < r.end && r.start < r.end:
			// An empty log is exempt: a DeleteBefore that outran a lost,
			// unsynced tail leaves start = end inside a batch it never kept.
			bad = append(bad, fmt.Sprintf("batch %s is missing though the log runs to %d", describe(w), r.end))
		case ok && !sameBatch(got, w):
			bad = append(bad, fmt.Sprintf("batch at %d is %s, want %s", w.BaseOffset, describe(got), describe(w)))
		}
	}
	if missing > maxMissing {
		bad = append(bad, fmt.Sprintf("... %d acknowledged batches missing in all", missing))
	}
	if x.strict {
		for _, b := range r.batches {
			if !want[b.BaseOffset] {
				bad = append(bad, fmt.Sprintf("batch %s was never written at that offset, or was truncated away (Truncate returned nil)", describe(b)))
			}
		}
	}
	return bad
}

func sameBatch(a, b engine.Batch) bool {
	return a.BaseOffset == b.BaseOffset && a.Records == b.Records && string(a.Data) == string(b.Data)
}

func describe(b engine.Batch) string {
	return fmt.Sprintf("[%d, %d) (%d records, %d bytes)", b.BaseOffset, b.NextOffset(), b.Records, len(b.Data))
}

// resume checks that appends go on at the recovered end: one more batch is
// appended, synced and read back. It returns the batch.
func resume(ctx context.Context, e engine.LogEngine, records int32, size int) (engine.Batch, []string) {
	end := e.EndOffset()
	b := enginetest.Batch(end, records, size)
	if err := e.Append(b); err != nil {
		return b, []string{fmt.Sprintf("Append at the recovered end %d failed: %v", end, err)}
	}
	if err := e.Sync(ctx, b.NextOffset()); err != nil {
		return b, []string{fmt.Sprintf("Sync after appending at the recovered end %d failed: %v", end, err)}
	}
	got, err := e.Read(end, 0)
	switch {
	case err != nil:
		return b, []string{fmt.Sprintf("Read(%d) of the batch appended after recovery failed: %v", end, err)}
	case len(got) == 0 || !sameBatch(got[0], b):
		return b, []string{fmt.Sprintf("the batch appended after recovery at %d does not read back", end)}
	}
	return b, nil
}
