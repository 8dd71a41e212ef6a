package sim

import (
	"bytes"
	"slices"

	"github.com/minikafka/minikafka/broker/batch/batchcodec"
)

// offsetHistory looks for inconsistent-offsets: one offset holding two
// values. It keeps, per partition, what is committed: the batches below a
// replica's high watermark, byte for byte, as the first replica to commit
// them had them. Every replica whose high watermark passes a batch must
// hold the same bytes (replicas are identical below the HW), and every
// record a consumer reads must be the committed one.
type offsetHistory struct {
	batches map[tp]map[int64][]byte // base offset -> stored bytes
	values  map[tp]map[int64][]byte // offset -> record value
	// lost are values committed at an offset and lost there with every
	// copy unsynced (sync=interval, never): a read of one in flight then
	// is no anomaly.
	lost map[tp]map[int64][][]byte
}

func (h *offsetHistory) init() {
	h.batches = map[tp]map[int64][]byte{}
	h.values = map[tp]map[int64][]byte{}
	h.lost = map[tp]map[int64][][]byte{}
}

func (h *offsetHistory) committed(s *Sim, r view, from, to int64) {
	bm, vm := h.batches[r.tp], h.values[r.tp]
	if bm == nil {
		bm, vm = map[int64][]byte{}, map[int64][]byte{}
		h.batches[r.tp], h.values[r.tp] = bm, vm
	}
	for _, bt := range storedBatches(r.log, from, to) {
		if prev, ok := bm[bt.BaseOffset]; ok {
			if !bytes.Equal(prev, bt.Data) {
				s.violate("inconsistent-offsets", "replicas differ below the high watermark: broker %d holds another batch at %s offset %d than was committed before (HW %d -> %d)",
					r.broker, r.tp, bt.BaseOffset, from, to)
				return
			}
			continue
		}
		bm[bt.BaseOffset] = bt.Data
		for _, rec := range decode(s, [][]byte{bt.Data}) {
			if prev, ok := vm[rec.Offset]; ok && !slices.Equal(prev, rec.Value) {
				s.violate("inconsistent-offsets", "%s offset %d committed as %q, then as %q by broker %d", r.tp, rec.Offset, prev, rec.Value, r.broker)
				return
			}
			vm[rec.Offset] = rec.Value
		}
	}
}

// forget drops what was committed of k from offset from: lost with every
// copy unsynced (sync=interval or never), it may be written again.
func (h *offsetHistory) forget(k tp, from int64) {
	for base := range h.batches[k] {
		if base >= from {
			delete(h.batches[k], base)
		}
	}
	for off, v := range h.values[k] {
		if off >= from {
			if h.lost[k] == nil {
				h.lost[k] = map[int64][][]byte{}
			}
			h.lost[k][off] = append(h.lost[k][off], v)
			delete(h.values[k], off)
		}
	}
}

// wasLost reports whether v was committed at off of k and lost there with
// every copy unsynced.
func (h *offsetHistory) wasLost(k tp, off int64, v []byte) bool {
	return slices.ContainsFunc(h.lost[k][off], func(l []byte) bool { return slices.Equal(l, v) })
}

func (h *offsetHistory) read(s *Sim, c *consumerClient, k tp, recs []batchcodec.Record) {
	vm := h.values[k]
	for _, r := range recs {
		prev, ok := vm[r.Offset]
		if h.wasLost(k, r.Offset, r.Value) && !slices.Equal(prev, r.Value) {
			continue
		}
		if !ok {
			s.violate("inconsistent-offsets", "consumer %d read %q at %s offset %d, which no replica committed", c.id, r.Value, k, r.Offset)
			return
		}
		if !slices.Equal(prev, r.Value) {
			s.violate("inconsistent-offsets", "consumer %d read %q at %s offset %d, committed as %q", c.id, r.Value, k, r.Offset, prev)
			return
		}
	}
}
