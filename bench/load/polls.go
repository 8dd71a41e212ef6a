package load

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Polled is one record as a consumer read it: its offset and its value's
// id (a tracked id, or the whole value).
type Polled struct {
	Offset int64
	ID     string
}

// Polls are a topic as a consumer read it: each partition's records in
// the order polled.
type Polls map[int32][]Polled

func idOf(v []byte) string {
	if id, ok := TrackedValueID(v); ok {
		return id
	}
	return string(v)
}

// Reader is a consumer that reads a topic from the start until Stop,
// keeping what every poll returned, in order: the reads Audit checks for
// Jepsen's nonmonotonic-poll and poll-skip.
type Reader struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	seen   Polls
}

// StartReader starts reading topic.
func StartReader(ctx context.Context, c Client, topic string) (*Reader, error) {
	opts, err := c.options()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(50*time.Millisecond))...)
	if err != nil {
		return nil, fmt.Errorf("load: reader: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Reader{cl: cl, cancel: cancel, done: make(chan struct{}), seen: Polls{}}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			r.cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
				r.seen[rec.Partition] = append(r.seen[rec.Partition], Polled{rec.Offset, idOf(rec.Value)})
			})
		}
	}()
	return r, nil
}

// Stop ends the reader and returns what it read.
func (r *Reader) Stop() Polls {
	r.once.Do(func() {
		r.cancel()
		<-r.done
		r.cl.Close()
	})
	return r.seen
}

// checkPolls checks what a consumer polled against the log read back at
// the end (final, each partition in offset order).
func checkPolls(res *AuditResult, polls, final Polls) {
	for p, rs := range polls {
		byOffset := map[int64]string{}
		var offsets []int64
		for _, r := range final[p] {
			byOffset[r.Offset] = r.ID
			offsets = append(offsets, r.Offset)
		}
		for i, r := range rs {
			if id, ok := byOffset[r.Offset]; ok && id != r.ID {
				res.ReadMismatches++
			}
			if i == 0 {
				continue
			}
			prev := rs[i-1].Offset
			if r.Offset <= prev {
				res.Nonmonotonic++
				continue
			}
			// The log's first offset after prev must be the one read next.
			j := sort.Search(len(offsets), func(k int) bool { return offsets[k] > prev })
			if j < len(offsets) && offsets[j] < r.Offset {
				res.PollSkips++
			}
		}
	}
}
