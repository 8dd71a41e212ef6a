// Package load drives a Kafka-compatible broker with franz-go clients and
// measures it: producers in closed loop (as fast as possible with a bounded
// number of records in flight) or open loop (a target rate, latency measured
// from each record's intended send time so a stalled broker cannot hide
// behind a slowed-down producer, the coordinated-omission trap), consumers
// that read from the start or the tail, and end-to-end latency from produce
// to consume. The benchmark runner and cmd/bench's load commands share it,
// through Driver.
//
// A tracked producer (tracked.go) keeps every acknowledgement, and which
// broker gave it, through a cluster's faults; Audit then consumes the topic
// and counts what was lost, duplicated or misplaced.
//
// Records carry their send time inside the value (see stamp.go) when they are
// at least StampBytes long, so end-to-end latency has nanosecond resolution
// instead of the millisecond of Kafka's record timestamp.
package load

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrConfig marks a workload that cannot run as described.
var ErrConfig = errors.New("load: bad config")

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

// Client holds what every client of a workload shares.
type Client struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string `json:"brokers"`
	// Opts are extra franz-go options appended after the workload's own.
	Opts []kgo.Opt `json:"-"`
}

func (c Client) options() ([]kgo.Opt, error) {
	if len(c.Brokers) == 0 {
		return nil, configErr("no brokers")
	}
	return []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}, nil
}

// Codec returns the franz-go compression codec called name: none, gzip,
// snappy, lz4 or zstd.
func Codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, configErr("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// AcksOpts returns the franz-go options for acks "all" (or "-1"), "1" or
// "0". Idempotence needs acks=all; with fewer acks it is refused rather than
// silently dropped.
func AcksOpts(acks string, idempotent bool) ([]kgo.Opt, error) {
	var a kgo.Acks
	switch acks {
	case "all", "-1", "":
		a = kgo.AllISRAcks()
	case "1":
		a = kgo.LeaderAck()
	case "0":
		a = kgo.NoAck()
	default:
		return nil, configErr("acks %q: want all, 1 or 0", acks)
	}
	opts := []kgo.Opt{kgo.RequiredAcks(a)}
	isAll := a == kgo.AllISRAcks()
	switch {
	case idempotent && !isAll:
		return nil, configErr("idempotence needs acks=all, not acks=%s", acks)
	case !idempotent:
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return opts, nil
}

// Rate is count per second over d, 0 when d is not positive.
func Rate(count int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(count) / d.Seconds()
}
