package partition

import (
	"encoding/binary"
	"fmt"

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

// decompressor is shared: franz-go's is safe for concurrent use.
var decompressor = kgo.DefaultDecompressor()

// findRecord returns the offset and timestamp of the first record of batch
// b that satisfies match. Only this lookup decodes records: it reads each
// record's length, attributes, timestamp delta and offset delta.
//
// Records below the log start (a batch the start falls inside) are not
// answered: the first such record's offset is the start.
func (p *Partition) findRecord(b []byte, h batch.Header, match func(int64) bool) (int64, int64, error) {
	start := p.log.StartOffset()
	if h.Attributes.LogAppendTime() {
		// Every record carries the batch's max timestamp.
		if match(h.MaxTimestamp) {
			return max(h.BaseOffset, start), h.MaxTimestamp, nil
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
		if rts := h.FirstTimestamp + tsDelta; match(rts) && h.BaseOffset+offDelta >= start {
			return h.BaseOffset + offDelta, rts, nil
		}
	}
	// The producer's maxTimestamp disagrees with its records (or the records
	// do not decode): answer with the batch, as a time index would.
	return max(h.BaseOffset, start), h.MaxTimestamp, nil
}
