package partition

import (
	"fmt"
	"sort"
	"sync"

	"github.com/minikafka/minikafka/broker/batch"
)

// timeIndexEvery is the batch bytes between two time index entries: a
// lookup reads at most about this much beyond the batch it finds.
const timeIndexEvery = 1 << 20

// timeIndex finds batches by timestamp and by position in bytes without
// decoding the whole log, for ListOffsets and retention. It is built lazily
// (the first use scans the committed log's batch headers once) and catches
// up on each use with what was committed since.
//
// Kafka's rule holds because the index keeps the running maximum: entry k
// says that every batch below offset[k] has a max timestamp of at most
// before[k]; so the first batch with max >= ts lies after the last entry
// with before < ts, and within timeIndexEvery bytes of it. Retention only
// removes batches, which keeps every "at most" true.
type timeIndex struct {
	mu         sync.Mutex
	covered    int64 // batches below covered are indexed
	running    int64 // max timestamp of those batches; -1 if none
	maxBase    int64 // base offset of the first batch that reached running
	entries    []tsEntry
	sinceAdd   int
	cumCovered int64 // bytes of the batches below covered, from the index origin
	start      int64 // the log start the index knows (retention moves it)
	cumStart   int64 // bytes from the index origin to start
}

type tsEntry struct {
	offset int64 // a batch boundary
	before int64 // max timestamp of all batches below offset
	cum    int64 // bytes of the batches below offset, from the index origin
}

// reset makes the index empty at the log start; the next catchUp rebuilds it.
func (ti *timeIndex) reset() { ti.entries = nil }

// catchUp indexes the committed batches from covered to the HW. The caller
// holds ti.mu.
func (ti *timeIndex) catchUp(p *Partition) error {
	start, hw := p.log.StartOffset(), p.wm.get()
	if ti.entries == nil || start != ti.start {
		// First use, or the log start moved behind the index's back.
		ti.covered, ti.running, ti.maxBase, ti.sinceAdd = start, -1, -1, 0
		ti.cumCovered, ti.start, ti.cumStart = 0, start, 0
		ti.entries = []tsEntry{{offset: start, before: -1}}
	}
	for ti.covered < hw {
		bs, err := p.log.Read(ti.covered, scanChunkBytes)
		if err != nil {
			return p.storageErr("time index", err)
		}
		if len(bs) == 0 {
			return nil
		}
		for _, b := range bs {
			if b.NextOffset() > hw {
				return nil
			}
			if b.NextOffset() <= ti.covered {
				continue // a batch the last read already covered
			}
			// A batch holding covered but starting below it (a log start
			// inside a batch, as DeleteRecords may leave) is covered whole.
			h, err := batch.ParseHeader(b.Data)
			if err != nil {
				return p.storageErr("time index", fmt.Errorf("batch at %d: %w", b.BaseOffset, err))
			}
			if ti.sinceAdd >= timeIndexEvery {
				ti.entries = append(ti.entries, tsEntry{offset: b.BaseOffset, before: ti.running, cum: ti.cumCovered})
				ti.sinceAdd = 0
			}
			if h.MaxTimestamp > ti.running {
				ti.running, ti.maxBase = h.MaxTimestamp, b.BaseOffset
			}
			ti.sinceAdd += len(b.Data)
			ti.cumCovered += int64(len(b.Data))
			ti.covered = b.NextOffset()
		}
	}
	return nil
}

// scan visits the committed batches from entry k on, with the bytes before
// each (from the index origin), until visit returns true; it returns the
// offset and bytes where it stopped, or covered and cumCovered if it never
// did. The caller holds ti.mu and has caught up.
func (ti *timeIndex) scan(p *Partition, k int, visit func(b []byte, h batch.Header, cum int64) bool) (int64, int64, error) {
	off, cum := ti.entries[k].offset, ti.entries[k].cum
	if off < ti.start {
		off, cum = ti.start, ti.cumStart
	}
	for off < ti.covered {
		bs, err := p.log.Read(off, scanChunkBytes)
		if err != nil {
			return 0, 0, p.storageErr("time index", err)
		}
		if len(bs) == 0 {
			break
		}
		for _, b := range bs {
			if b.BaseOffset >= ti.covered {
				return ti.covered, ti.cumCovered, nil
			}
			h, err := batch.ParseHeader(b.Data)
			if err != nil {
				return 0, 0, p.storageErr("time index", fmt.Errorf("batch at %d: %w", b.BaseOffset, err))
			}
			if visit(b.Data, h, cum) {
				return b.BaseOffset, cum, nil
			}
			off, cum = b.NextOffset(), cum+int64(len(b.Data))
		}
	}
	return ti.covered, ti.cumCovered, nil
}

// entryBefore is the last entry whose batches below all have max < ts.
func (ti *timeIndex) entryBefore(ts int64) int {
	return max(0, sort.Search(len(ti.entries), func(i int) bool { return ti.entries[i].before >= ts })-1)
}

// lookup finds the first committed record with timestamp >= ts.
func (ti *timeIndex) lookup(p *Partition, ts int64) (int64, int64, error) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if err := ti.catchUp(p); err != nil {
		return 0, 0, err
	}
	if ti.running < ts {
		return -1, -1, nil
	}
	var found []byte
	var fh batch.Header
	_, _, err := ti.scan(p, ti.entryBefore(ts), func(b []byte, h batch.Header, _ int64) bool {
		if h.MaxTimestamp >= ts {
			found, fh = b, h
			return true
		}
		return false
	})
	if err != nil || found == nil {
		return -1, -1, err
	}
	return p.findRecord(found, fh, func(rts int64) bool { return rts >= ts })
}

// lookupMax finds the first committed record with the largest timestamp.
func (ti *timeIndex) lookupMax(p *Partition) (int64, int64, error) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if ti.maxBase >= 0 && ti.maxBase < p.log.StartOffset() {
		ti.reset() // the batch with the maximum was deleted: recompute
	}
	if err := ti.catchUp(p); err != nil {
		return 0, 0, err
	}
	if ti.maxBase < 0 {
		return -1, -1, nil
	}
	bs, err := p.log.Read(ti.maxBase, 1)
	if err != nil || len(bs) == 0 {
		return 0, 0, p.storageErr("list offsets", fmt.Errorf("batch at %d: %w", ti.maxBase, err))
	}
	h, err := batch.ParseHeader(bs[0].Data)
	if err != nil {
		return 0, 0, p.storageErr("list offsets", err)
	}
	want := ti.running
	return p.findRecord(bs[0].Data, h, func(rts int64) bool { return rts == want })
}

// entryAtBytes is the last entry with at most cum bytes before it.
func (ti *timeIndex) entryAtBytes(cum int64) int {
	return max(0, sort.Search(len(ti.entries), func(i int) bool { return ti.entries[i].cum > cum })-1)
}

// moveStart records that the log now starts at offset, with cum bytes
// before it; entries below it go, and the first entry sits at it.
func (ti *timeIndex) moveStart(offset, cum int64) {
	keep := []tsEntry{{offset: offset, before: -1, cum: cum}}
	for _, e := range ti.entries[1:] {
		if e.offset > offset {
			keep = append(keep, e)
		}
	}
	ti.entries, ti.start, ti.cumStart = keep, offset, cum
}
