package kvlog

import (
	"fmt"

	"github.com/minikafka/minikafka/engine"
)

// Collector gathers the batches one Read returns while a store iterator walks
// the batch keys in order, starting at the last key at or below the offset
// read: the batch holding Offset first, then the ones after it, contiguous,
// as many as fit in MaxBytes of data but always at least one (Kafka's rule,
// so that a consumer can always make progress).
type Collector struct {
	Offset   int64
	MaxBytes int
	// Batches is what was gathered, in order.
	Batches []engine.Batch
	size    int
}

// Full reports whether a next batch of dataLen bytes would go past MaxBytes;
// never before the first batch. Check it before decoding or copying the
// next batch: a batch that does not fit is not read at all.
func (c *Collector) Full(dataLen int) bool {
	return len(c.Batches) > 0 && c.size+dataLen > c.MaxBytes
}

// Add takes the next batch in key order. For the first batch it returns
// false and takes nothing if the batch ends at or below Offset: the batch
// that held Offset is gone (a concurrent Truncate or DeleteBefore took it)
// and the walk should stop. A batch that does not start where the one before
// it ended (or a first batch that starts past Offset) is a hole in the log,
// which is never served as data: ErrCorrupt.
func (c *Collector) Add(b engine.Batch) (bool, error) {
	if n := len(c.Batches); n > 0 {
		if prev := c.Batches[n-1].NextOffset(); b.BaseOffset != prev {
			return false, fmt.Errorf("batch %d follows one ending at %d, a hole in the log: %w", b.BaseOffset, prev, engine.ErrCorrupt)
		}
	} else {
		if b.NextOffset() <= c.Offset {
			return false, nil
		}
		if b.BaseOffset > c.Offset {
			return false, fmt.Errorf("the first batch at or after %d starts at %d, a hole in the log: %w", c.Offset, b.BaseOffset, engine.ErrCorrupt)
		}
	}
	c.size += len(b.Data)
	c.Batches = append(c.Batches, b)
	return true, nil
}

// Next is the offset just past the last batch gathered, or Offset if none.
func (c *Collector) Next() int64 {
	if n := len(c.Batches); n > 0 {
		return c.Batches[n-1].NextOffset()
	}
	return c.Offset
}
