package group

import (
	"context"
	"time"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/coordlog"
)

// __consumer_offsets is compacted as coordlog.Keyed describes: every
// record the coordinator appends goes through it, and once the log holds
// CompactRatio records per live key and at least CompactMinBytes it copies
// the live records to the log end and moves the log start to where the
// copy began. Offsets committed in a transaction pin the log from their
// batch until the marker decides them (txn.go).

// Defaults for Config's compaction fields.
const (
	DefaultCompactRatio    = coordlog.DefaultCompactRatio
	DefaultCompactMinBytes = coordlog.DefaultCompactMinBytes
)

// LogStats describes __consumer_offsets as the coordinator sees it.
type LogStats = coordlog.Stats

// LogStats returns the state of __consumer_offsets.
func (c *Coordinator) LogStats() LogStats { return c.lg.Stats() }

// Compact runs a compaction now, whatever the thresholds, after the one
// under way if any, and returns its outcome (an error once Close began).
// Compactions start by themselves (see Config); this is for tests and
// tools.
func (c *Coordinator) Compact(ctx context.Context) error { return c.lg.Compact(ctx) }

// append writes recs as one batch at the log end, in the caller's order
// (coordlog.Keyed.Append).
func (c *Coordinator) append(recs []Record, now time.Time) (int64, error) {
	return c.lg.Append(kvs(recs), now)
}

func kvs(recs []Record) []batch.KV {
	out := make([]batch.KV, len(recs))
	for i, r := range recs {
		out[i] = batch.KV{Key: r.Key, Value: r.Value}
	}
	return out
}
