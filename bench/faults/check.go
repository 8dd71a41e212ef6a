package faults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench/load"
)

// The anomalies, by Jepsen's names (and "no-progress" for liveness).
const (
	LostWrite           = "lost-write"           // acknowledged, not in the log at the end
	Duplicate           = "duplicate"            // in the log at more than one offset
	InconsistentOffsets = "inconsistent-offsets" // at another offset than acknowledged, or two reads disagree on an offset
	NonmonotonicPoll    = "nonmonotonic-poll"    // a consumer's offsets of a partition went back
	PollSkip            = "poll-skip"            // a consumer's next offset skipped over records the log holds
	NoProgress          = "no-progress"          // a partition did not acknowledge within the bound after a heal
)

// AnomalyNames are the anomalies in the report's order.
var AnomalyNames = []string{LostWrite, Duplicate, InconsistentOffsets, NonmonotonicPoll, PollSkip, NoProgress}

// Anomalies counts each anomaly found, with a few examples.
type Anomalies struct {
	Counts   map[string]int `json:"counts,omitempty"`
	Examples []string       `json:"examples,omitempty"`
}

const examplesMax = 10

func (a *Anomalies) add(name, example string) {
	if a.Counts == nil {
		a.Counts = map[string]int{}
	}
	a.Counts[name]++
	if len(a.Examples) < examplesMax {
		a.Examples = append(a.Examples, name+": "+example)
	}
}

// Total is the number of anomalies of every kind.
func (a Anomalies) Total() int {
	n := 0
	for _, c := range a.Counts {
		n += c
	}
	return n
}

// record is one record as a consumer saw it: its offset and its value's
// id (a tracked id, or the whole value).
type record struct {
	offset int64
	id     string
}

func idOf(v []byte) string {
	if id, ok := load.TrackedValueID(v); ok {
		return id
	}
	return string(v)
}

// log is a topic as read: each partition's records in the order read.
type log map[int32][]record

func (l log) count() int64 {
	n := 0
	for _, rs := range l {
		n += len(rs)
	}
	return int64(n)
}

// reader is a consumer that reads the topic from the start all through a
// cell, keeping what each poll returned in order: the reads checked for
// nonmonotonic-poll and poll-skip against the log at the end.
type reader struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	seen   log
}

func startReader(ctx context.Context, seeds []string, topic string) (*reader, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("faults: reader: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &reader{cl: cl, cancel: cancel, done: make(chan struct{}), seen: log{}}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			r.cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
				r.seen[rec.Partition] = append(r.seen[rec.Partition], record{rec.Offset, idOf(rec.Value)})
			})
		}
	}()
	return r, nil
}

// stop ends the reader and returns what it read.
func (r *reader) stop() log {
	r.once.Do(func() {
		r.cancel()
		<-r.done
		r.cl.Close()
	})
	return r.seen
}

// readAll reads topic from its start to its end offsets with a fresh
// consumer.
func readAll(ctx context.Context, seeds []string, topic string) (log, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, fmt.Errorf("faults: final read: %w", err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("faults: end offsets: %w", err)
	}
	end := map[int32]int64{}
	remaining := int64(0)
	ends.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset; remaining += o.Offset })
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("faults: end offsets: %w", err)
	}
	l := log{}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("faults: final read: %d records left: %w", remaining, ctx.Err())
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset < end[rec.Partition] {
				remaining--
				l[rec.Partition] = append(l[rec.Partition], record{rec.Offset, idOf(rec.Value)})
			}
		})
	}
	return l, nil
}

// check compares what the producers were told and what the reader saw
// with the log at the end.
func check(franz map[string]load.Ack, kcat []string, final, live log) Anomalies {
	var a Anomalies
	at := map[string]load.Ack{} // id -> where the final log holds it
	byOffset := map[load.Ack]string{}
	for p, rs := range final {
		for _, r := range rs {
			where := load.Ack{Partition: p, Offset: r.offset}
			byOffset[where] = r.id
			if prev, dup := at[r.id]; dup {
				a.add(Duplicate, fmt.Sprintf("%s at %d/%d and %d/%d", r.id, prev.Partition, prev.Offset, p, r.offset))
				continue
			}
			at[r.id] = where
		}
	}
	for _, id := range slices.Sorted(maps.Keys(franz)) {
		want := franz[id]
		got, ok := at[id]
		switch {
		case !ok:
			a.add(LostWrite, fmt.Sprintf("%s acknowledged at %d/%d", id, want.Partition, want.Offset))
		case got != want:
			a.add(InconsistentOffsets, fmt.Sprintf("%s acknowledged at %d/%d, stored at %d/%d", id, want.Partition, want.Offset, got.Partition, got.Offset))
		}
	}
	for _, id := range kcat {
		if _, ok := at[id]; !ok {
			a.add(LostWrite, id+" acknowledged to kcat")
		}
	}
	for p, rs := range live {
		checkPolls(&a, p, rs, final[p], byOffset)
	}
	return a
}

// checkPolls checks one partition's reads in the order they came.
func checkPolls(a *Anomalies, p int32, rs, final []record, byOffset map[load.Ack]string) {
	var offsets []int64
	for _, r := range final {
		offsets = append(offsets, r.offset)
	}
	for i, r := range rs {
		if id, ok := byOffset[load.Ack{Partition: p, Offset: r.offset}]; ok && id != r.id {
			a.add(InconsistentOffsets, fmt.Sprintf("%d/%d read as %s, holds %s at the end", p, r.offset, r.id, id))
		}
		if i == 0 {
			continue
		}
		prev := rs[i-1].offset
		if r.offset <= prev {
			a.add(NonmonotonicPoll, fmt.Sprintf("partition %d: offset %d read after %d", p, r.offset, prev))
			continue
		}
		// The log's first offset after prev must be the one read next.
		j := sort.Search(len(offsets), func(k int) bool { return offsets[k] > prev })
		if j < len(offsets) && offsets[j] < r.offset {
			a.add(PollSkip, fmt.Sprintf("partition %d: read %d then %d, skipping %d", p, prev, r.offset, offsets[j]))
		}
	}
}
