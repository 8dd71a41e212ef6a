package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/bufpool"
	"github.com/minikafka/minikafka/broker/node"
	"github.com/minikafka/minikafka/broker/partition"
)

// Fetch: v4-15
//
// Behaviour:
//   - The whole fetch runs in the waiting phase, so a long poll never holds
//     up the connection's reader.
//   - Records are the stored batch bytes concatenated, never decoded, and
//     only below the high watermark. Each partition gets at most its
//     PartitionMaxBytes, the response at most min(MaxBytes, the server's
//     FetchMaxBytes); the first partition with data gets at least one whole
//     batch even if it is larger (Kafka's rule, so a consumer always makes
//     progress); a later partition whose data does not fit gets none.
//   - Long polling: until MinBytes of records are available or MaxWaitMillis
//     has passed on the injected clock, woken as soon as any fetched
//     partition gets data (Partition.WaitForData). A partition error ends
//     the wait at once. Server shutdown ends it early.
//   - Fetch sessions (v7+) are declined: SessionID 0 and no error to a
//     request with SessionID 0; a request naming a session gets
//     FETCH_SESSION_ID_NOT_FOUND, and the client falls back to full fetches.
//   - Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION; an offset
//     outside the log: OFFSET_OUT_OF_RANGE with the log's bounds.
//   - v9+: CurrentLeaderEpoch newer than ours UNKNOWN_LEADER_EPOCH, older
//     FENCED_LEADER_EPOCH (-1 skips the check).
//   - read_committed (IsolationLevel 1) reads up to the last stable offset
//     (the first offset of a transaction not yet decided and committed, or
//     the high watermark) and returns the aborted transactions whose
//     records the answer may hold (producer id and first offset), which
//     the consumer drops along with the markers. read_uncommitted reads to
//     the high watermark, markers and aborted records included.
//   - A fetch with a replica id (ReplicaID, or ReplicaState from v15) is a
//     follower's (fetch_replica.go): served up to the leader's durable end,
//     not the high watermark, with a diverging epoch when its log parts
//     from the leader's; it counts toward the ISR and the high watermark.
//
// Version notes:
//   - v4: LastStableOffset, AbortedTransactions (null for read_uncommitted);
//     v5: LogStartOffset; v7: sessions; v9: CurrentLeaderEpoch;
//     v11: PreferredReadReplica (-1); v12: flexible, LastFetchedEpoch
//     (a follower's, checked against the leader's epochs); v13: topics by
//     id (UNKNOWN_TOPIC_ID for one that does not exist); v14: no change;
//     v15: ReplicaState (a follower's id and broker epoch, KIP-903).

func init() { register(1, 4, 15, handleFetch) }

func handleFetch(r *request) reply {
	req := r.body.(*kmsg.FetchRequest)
	charge, lease := &r.p.respCharge, &r.p.lease
	return later(func(ctx context.Context) kmsg.Response { return r.s.fetch(ctx, req, charge, lease) })
}

// fetchTarget is one requested partition, resolved.
type fetchTarget = node.Target

// fetch serves req; *charge is what the response holds of the server's
// response budget when it returns, and lease holds the pooled memory its
// records are in, which the connection releases once it is written.
func (s *Server) fetch(ctx context.Context, req *kmsg.FetchRequest, charge *int64, lease *bufpool.Lease) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.Version >= 7 && req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp
	}
	targets := node.ResolveTargets(s.store.Image(), req)
	if replica, epoch := node.ReplicaOf(req); replica >= 0 {
		return s.fetchForFollower(ctx, req, resp, targets, replica, epoch, charge, lease)
	}
	for i := range targets {
		t := &targets[i]
		if t.Err == nil {
			t.Part, t.Err = s.leaderOf(t.Topic, t.Req.Partition)
		}
		if t.Err == nil {
			t.Err = checkEpoch(req.Version >= 9, t.Req.CurrentLeaderEpoch, t.Part)
		}
	}
	maxBytes := int(s.cfg.FetchMaxBytes)
	if req.MaxBytes > 0 && int(req.MaxBytes) < maxBytes {
		maxBytes = int(req.MaxBytes)
	}
	waitCtx, cancel := withTimeout(ctx, s.cfg.Clock, time.Duration(req.MaxWaitMillis)*time.Millisecond)
	defer cancel()
	for {
		got, stop := s.chargedReadFetch(ctx, resp, req, targets, maxBytes, charge, lease)
		if stop || got >= int(req.MinBytes) || req.MaxWaitMillis <= 0 || waitCtx.Err() != nil {
			return resp
		}
		if !s.waitFetch(waitCtx, targets) {
			// Timed out or shutting down: answer with what there is,
			// which may have arrived since the last read.
			s.chargedReadFetch(ctx, resp, req, targets, maxBytes, charge, lease)
			return resp
		}
	}
}

// chargedReadFetch is readFetch within the response budget: it gives back
// what an earlier read of this fetch held, waits for room for the most this
// read can return, and keeps only what it returned. A long poll holds
// nothing while it waits.
func (s *Server) chargedReadFetch(ctx context.Context, resp *kmsg.FetchResponse, req *kmsg.FetchRequest, targets []fetchTarget, maxBytes int, charge *int64, lease *bufpool.Lease) (int, bool) {
	s.respBudget.release(*charge)
	*charge = 0
	want := int64(min(maxBytes, sumLimits(targets, maxBytes)))
	if err := s.respBudget.acquire(ctx, want); err != nil {
		// The connection is going away: nobody reads this answer.
		resp.Topics = resp.Topics[:0]
		return 0, true
	}
	got, stop := s.readFetch(resp, req, targets, maxBytes, lease)
	switch read := int64(got); {
	case read < want:
		s.respBudget.release(want - read)
	case read > want:
		s.respBudget.force(read - want) // a first batch over the limits
	}
	*charge = int64(got)
	return got, stop
}

// checkEpoch fences a request by the leader epoch it names (KIP-320).
func checkEpoch(check bool, epoch int32, p *partition.Partition) error {
	if !check || epoch < 0 {
		return nil
	}
	switch ours := p.LeaderEpoch(); {
	case epoch > ours:
		return kerr.UnknownLeaderEpoch
	case epoch < ours:
		return kerr.FencedLeaderEpoch
	}
	return nil
}

// readFetch (re)builds resp's topics from the partitions' current data. It
// returns the record bytes gathered and whether an error must end the wait.
//
// When the partitions' own limits add up to no more than maxBytes, nothing
// read can be wasted, so the partitions are read concurrently (a consumer
// waits for its fetch: the broker's time per fetch is its throughput).
// Otherwise they are read in order, each within what is left.
//
// The records go into memory lease holds; what an earlier read of this
// fetch put there is released first, as resp forgets it.
func (s *Server) readFetch(resp *kmsg.FetchResponse, req *kmsg.FetchRequest, targets []fetchTarget, maxBytes int, lease *bufpool.Lease) (int, bool) {
	resp.Topics = resp.Topics[:0]
	lease.Release()
	committed := req.IsolationLevel == 1
	reads := make([]partRead, len(targets))
	parallel := len(targets) > 1 && sumLimits(targets, maxBytes) <= maxBytes
	if parallel {
		// A few readers share the partitions: enough to overlap reads,
		// bounded however many partitions a request names.
		var next atomic.Int64
		read := func() {
			for i := int(next.Add(1) - 1); i < len(targets); i = int(next.Add(1) - 1) {
				reads[i] = readPartition(&targets[i], maxBytes, true, committed, lease)
			}
		}
		var wg sync.WaitGroup
		for range min(len(targets), fetchReaders) - 1 {
			wg.Add(1)
			go func() { defer wg.Done(); read() }()
		}
		read()
		wg.Wait()
	}

	resp.Topics = resp.Topics[:0]
	total, stop := 0, false
	var st *kmsg.FetchResponseTopic
	for i := range targets {
		t := &targets[i]
		st = node.ResponseTopic(resp, st, t)
		if !parallel {
			room := maxBytes - total
			reads[i] = readPartition(t, room, total == 0 || room > 0, committed, lease)
		}
		rd := &reads[i]
		if rd.err != nil {
			rd.sp.ErrorCode = errorCode(nil, rd.err)
			stop = true
			if rd.sp.ErrorCode == kerr.KafkaStorageError.Code {
				s.log.Error("fetch failed", "topic", t.Topic, "partition", t.Req.Partition, "err", rd.err)
			}
		}
		// Only the first partition with data may exceed the limits.
		if n := len(rd.sp.RecordBatches); total > 0 && total+n > maxBytes {
			rd.sp.RecordBatches = nil
		}
		total += len(rd.sp.RecordBatches)
		st.Partitions = append(st.Partitions, rd.sp)
	}
	return total, stop
}

// fetchReaders bounds the goroutines reading one fetch's partitions.
const fetchReaders = 4

// partRead is one partition's part of a fetch.
type partRead struct {
	sp  kmsg.FetchResponseTopicPartition
	err error
}

// sumLimits adds up what each partition may return.
func sumLimits(targets []fetchTarget, maxBytes int) int {
	sum := 0
	for i := range targets {
		sum += max(min(int(targets[i].Req.PartitionMaxBytes), maxBytes), 0)
	}
	return sum
}

// readPartition reads up to min(PartitionMaxBytes, room) bytes of t's
// records, and at least one batch if there is any: whether that batch may
// go in the response is the caller's decision. Without data it only fills in
// the partition's offsets. committed reads as read_committed.
func readPartition(t *fetchTarget, room int, data, committed bool, lease *bufpool.Lease) partRead {
	r := partRead{sp: kmsg.NewFetchResponseTopicPartition()}
	r.sp.Partition = t.Req.Partition
	if t.Err != nil {
		r.err = t.Err
		return r
	}
	r.sp.HighWatermark = t.Part.HighWatermark()
	r.sp.LastStableOffset = t.Part.LastStableOffset()
	r.sp.LogStartOffset = t.Part.StartOffset()
	if !data {
		return r
	}
	limit := max(min(int(t.Req.PartitionMaxBytes), room), 1)
	read := t.Part.ReadLeased
	if committed {
		read = t.Part.ReadCommitted
	}
	rd, err := read(t.Req.FetchOffset, limit, lease)
	if err != nil {
		r.err = err
		return r
	}
	r.sp.HighWatermark, r.sp.LastStableOffset, r.sp.LogStartOffset = rd.HighWatermark, rd.LastStableOffset, rd.LogStartOffset
	r.sp.RecordBatches = rd.Records
	if committed {
		r.sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(rd.Aborted))
		for _, a := range rd.Aborted {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.First
			r.sp.AbortedTransactions = append(r.sp.AbortedTransactions, at)
		}
	}
	return r
}

// waitFetch blocks until some target partition has data past its fetch
// offset (true), or ctx ends or the server is closing (false).
func (s *Server) waitFetch(ctx context.Context, targets []fetchTarget) bool {
	ctx, cancel := context.WithCancel(ctx)
	woke := make(chan struct{}, 1)
	var wg sync.WaitGroup
	// Stop every waiter, then wait for them: on any return.
	defer wg.Wait()
	defer cancel()
	// One waiter per partition, however often the request names it: data
	// past the lowest offset asked of it is what wakes the fetch.
	from := map[*partition.Partition]int64{}
	for i := range targets {
		t := &targets[i]
		if t.Err != nil {
			continue
		}
		if off, ok := from[t.Part]; !ok || t.Req.FetchOffset < off {
			from[t.Part] = t.Req.FetchOffset
		}
	}
	for p, offset := range from {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p.WaitForData(ctx, offset) == nil {
				select {
				case woke <- struct{}{}:
				default:
				}
			}
		}()
	}
	if hook := s.fetchParked.Load(); hook != nil {
		(*hook)()
	}
	select {
	case <-woke:
		return true
	case <-ctx.Done():
		return false
	case <-s.quit:
		return false
	}
}
