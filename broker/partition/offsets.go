package partition

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker/batch"
)

// Special ListOffsets timestamps.
const (
	TimestampLatest        = -1 // the high watermark
	TimestampEarliest      = -2 // the log start offset
	TimestampMax           = -3 // the record with the largest timestamp (KIP-734)
	TimestampEarliestLocal = -4 // KIP-405; without tiered storage, the log start
)

// timeIndexEvery is the batch bytes between two time index entries: a
// lookup reads at most about this much beyond the batch it finds.
const timeIndexEvery = 1 << 20

// ListOffset answers ListOffsets for one partition: TimestampEarliest (and
// TimestampEarliestLocal) the log start, TimestampLatest the high watermark,
// TimestampMax the offset and timestamp of the committed record with the
// largest timestamp, and a timestamp >= 0 the first committed record whose
// timestamp is at least that. The timestamp returned is -1 for the first
// two; (-1, -1) means no committed record qualifies. Other negative
// timestamps return kerr.InvalidRequest.
func (p *Partition) ListOffset(timestamp int64) (offset int64, ts int64, err error) {
	switch {
	case timestamp == TimestampEarliest || timestamp == TimestampEarliestLocal:
		return p.log.StartOffset(), -1, nil
	case timestamp == TimestampLatest:
		return p.wm.get(), -1, nil
	case timestamp == TimestampMax:
		return p.ti.lookupMax(p)
	case timestamp < 0:
		return 0, 0, p.wrap(fmt.Errorf("timestamp %d: %w", timestamp, kerr.InvalidRequest))
	}
	return p.ti.lookup(p, timestamp)
}

// timeIndex finds offsets by timestamp without decoding the whole log. It
// is built lazily (the first lookup scans the committed log's batch headers
// once) and catches up on each lookup with what was committed since. Kafka's
// rule holds because the index keeps the running maximum: entry k says that
// every batch below offset[k] has a max timestamp of at most before[k]; so
// the first batch with max >= ts lies after the last entry with before < ts,
// and within timeIndexEvery bytes of it.
type timeIndex struct {
	mu       sync.Mutex
	covered  int64 // batches below covered are indexed
	running  int64 // max timestamp of those batches; -1 if none
	maxBase  int64 // base offset of the first batch that reached running
	entries  []tsEntry
	sinceAdd int
}

type tsEntry struct {
	offset int64 // a batch boundary
	before int64 // max timestamp of all batches below offset
}

// catchUp indexes the committed batches from covered to the HW. The caller
// holds ti.mu.
func (ti *timeIndex) catchUp(p *Partition) error {
	start, hw := p.log.StartOffset(), p.wm.get()
	if ti.covered < start || ti.entries == nil {
		// First use, or the log start moved past what was indexed.
		ti.covered, ti.running, ti.maxBase, ti.sinceAdd = start, -1, -1, 0
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
			if b.BaseOffset < ti.covered {
				continue
			}
			h, err := batch.ParseHeader(b.Data)
			if err != nil {
				return p.storageErr("time index", fmt.Errorf("batch at %d: %w", b.BaseOffset, err))
			}
			if ti.sinceAdd >= timeIndexEvery {
				ti.entries = append(ti.entries, tsEntry{offset: b.BaseOffset, before: ti.running})
				ti.sinceAdd = 0
			}
			if h.MaxTimestamp > ti.running {
				ti.running, ti.maxBase = h.MaxTimestamp, b.BaseOffset
			}
			ti.sinceAdd += len(b.Data)
			ti.covered = b.NextOffset()
		}
	}
	return nil
}

func (ti *timeIndex) lookup(p *Partition, ts int64) (int64, int64, error) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if err := ti.catchUp(p); err != nil {
		return 0, 0, err
	}
	if ti.running < ts {
		return -1, -1, nil
	}
	// The last entry whose batches below all have max < ts.
	k := sort.Search(len(ti.entries), func(i int) bool { return ti.entries[i].before >= ts }) - 1
	for off := max(ti.entries[k].offset, p.log.StartOffset()); off < ti.covered; {
		bs, err := p.log.Read(off, scanChunkBytes)
		if err != nil {
			return 0, 0, p.storageErr("list offsets", err)
		}
		if len(bs) == 0 {
			break
		}
		for _, b := range bs {
			h, err := batch.ParseHeader(b.Data)
			if err != nil {
				return 0, 0, p.storageErr("list offsets", err)
			}
			if h.MaxTimestamp >= ts {
				return p.findRecord(b.Data, h, func(rts int64) bool { return rts >= ts })
			}
			off = b.NextOffset()
		}
	}
	return -1, -1, nil
}

func (ti *timeIndex) lookupMax(p *Partition) (int64, int64, error) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
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

// decompressor is shared: franz-go's is safe for concurrent use.
var decompressor = kgo.DefaultDecompressor()

// findRecord returns the offset and timestamp of the first record of batch
// b that satisfies match. Only this lookup decodes records: it reads each
// record's length, attributes, timestamp delta and offset delta.
func (p *Partition) findRecord(b []byte, h batch.Header, match func(int64) bool) (int64, int64, error) {
	if h.Attributes.LogAppendTime() {
		// Every record carries the batch's max timestamp.
		if match(h.MaxTimestamp) {
			return h.BaseOffset, h.MaxTimestamp, nil
		}
		return -1, -1, nil
	}
	recs, err := decompressor.Decompress(b[batch.HeaderSize:], kgo.CompressionCodecType(h.Attributes.Codec()))
	if err != nil {
		return 0, 0, p.storageErr("list offsets", fmt.Errorf("decompress batch at %d: %w", h.BaseOffset, err))
	}
	for i := int32(0); i < h.NumRecords && len(recs) > 0; i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 0 || length > int64(len(recs)-n) {
			break
		}
		body := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		if len(body) < 1 {
			break
		}
		tsDelta, k := binary.Varint(body[1:])
		if k <= 0 {
			break
		}
		offDelta, j := binary.Varint(body[1+k:])
		if j <= 0 {
			break
		}
		if rts := h.FirstTimestamp + tsDelta; match(rts) {
			return h.BaseOffset + offDelta, rts, nil
		}
	}
	// The producer's maxTimestamp disagrees with its records (or the records
	// do not decode): answer with the batch, as a time index would.
	return h.BaseOffset, h.MaxTimestamp, nil
}
