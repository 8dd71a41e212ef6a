package partition

import (
	"github.com/minikafka/minikafka/broker/bufpool"
	"github.com/minikafka/minikafka/engine"
)

// readSlackBytes is what an engine may read beyond the byte budget: the
// frames it skips to reach the offset and the header after the last one
// (segment reads up to two index intervals and a header more).
const readSlackBytes = 16 << 10

// readBufMin is the smallest first buffer of a pooled read. The first
// buffer is sized by what the partition's last read took, not by the
// budget: a fetch of many partitions at their tails would otherwise hold a
// budget-sized buffer per partition until its response is written. A read
// that needs more grows its buffer (the engine allocates the bigger one,
// which the lease then puts in the pool).
const readBufMin = 32 << 10

// readRecords reads the batches from the one holding offset, about
// maxBytes of them but at least one, and returns those that end at or
// below end, concatenated. With a lease, the bytes are read and joined in
// pooled memory (bufpool) that the lease holds: the caller must keep the
// result only until it releases the lease. With a nil lease the memory is
// the garbage collector's.
func (p *Partition) readRecords(offset int64, maxBytes int, end int64, lease *bufpool.Lease) ([]byte, error) {
	if lease == nil {
		bs, err := p.log.Read(offset, maxBytes)
		if err != nil {
			return nil, err
		}
		return Concat(bs, end), nil
	}
	var (
		bs  []engine.Batch
		err error
	)
	if into, ok := engine.As[engine.BufferReader](p.log); ok {
		size := min(maxBytes+readSlackBytes, max(int(p.readHint.Load()), readBufMin))
		buf := bufpool.Get(size)[:0]
		var used []byte
		bs, used, err = into.ReadInto(buf, offset, maxBytes)
		took := readSlackBytes
		for _, b := range bs {
			took += len(b.Data) + len(b.Data)/16 // and the engine's framing, about
		}
		p.readHint.Store(int64(took))
		// The batches lie in buf, in used when the engine replaced buf,
		// or in memory the engine allocated on the way: hold both.
		lease.Hold(buf)
		if cap(used) > 0 && &used[:cap(used)][0] != &buf[:cap(buf)][0] {
			lease.Hold(used)
		}
	} else {
		bs, err = p.log.Read(offset, maxBytes)
	}
	if err != nil {
		return nil, err
	}
	return concatInto(bs, end, lease), nil
}

// concatInto is Concat into a pooled buffer the lease holds, when more
// than one batch must be joined.
func concatInto(bs []engine.Batch, end int64, lease *bufpool.Lease) []byte {
	n, size := wholeBatches(bs, end)
	if n <= 1 {
		return Concat(bs[:n], end)
	}
	out := bufpool.Get(size)[:0]
	for _, b := range bs[:n] {
		out = append(out, b.Data...)
	}
	lease.Hold(out)
	return out
}
