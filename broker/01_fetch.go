package broker

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
)

// Fetch: v4-12
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
//   - read_committed reads the same as read_uncommitted: without
//     transactions the last stable offset is the high watermark.
//
// Version notes:
//   - v4: LastStableOffset, AbortedTransactions (always null here);
//     v5: LogStartOffset; v7: sessions; v9: CurrentLeaderEpoch;
//     v11: PreferredReadReplica (-1); v12: flexible, LastFetchedEpoch
//     (ignored: no divergence detection on a single broker).

func init() { register(1, 4, 12, handleFetch) }

func handleFetch(r *request) reply {
	req := r.body.(*kmsg.FetchRequest)
	return later(func(ctx context.Context) kmsg.Response { return r.s.fetch(ctx, req) })
}

// fetchTarget is one requested partition, resolved.
type fetchTarget struct {
	topic string
	req   *kmsg.FetchRequestTopicPartition
	part  *partition.Partition // nil when the partition is unknown
	err   error                // resolving error, sticky for the request
}

func (s *Server) fetch(ctx context.Context, req *kmsg.FetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.Version >= 7 && req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp
	}
	var targets []fetchTarget
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for pi := range rt.Partitions {
			t := fetchTarget{topic: rt.Topic, req: &rt.Partitions[pi]}
			t.part, t.err = s.parts.Partition(rt.Topic, t.req.Partition)
			if t.err == nil {
				t.err = checkEpoch(req.Version >= 9, t.req.CurrentLeaderEpoch, t.part)
			}
			targets = append(targets, t)
		}
	}
	maxBytes := int(s.cfg.FetchMaxBytes)
	if req.MaxBytes > 0 && int(req.MaxBytes) < maxBytes {
		maxBytes = int(req.MaxBytes)
	}
	waitCtx, cancel := withTimeout(ctx, s.cfg.Clock, time.Duration(req.MaxWaitMillis)*time.Millisecond)
	defer cancel()
	for {
		got, stop := s.readFetch(resp, req, targets, maxBytes)
		if stop || got >= int(req.MinBytes) || req.MaxWaitMillis <= 0 || waitCtx.Err() != nil {
			return resp
		}
		if !s.waitFetch(waitCtx, targets) {
			// Timed out or shutting down: answer with what there is,
			// which may have arrived since the last read.
			s.readFetch(resp, req, targets, maxBytes)
			return resp
		}
	}
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
func (s *Server) readFetch(resp *kmsg.FetchResponse, req *kmsg.FetchRequest, targets []fetchTarget, maxBytes int) (int, bool) {
	resp.Topics = resp.Topics[:0]
	total, stop := 0, false
	var st *kmsg.FetchResponseTopic
	for i := range targets {
		t := &targets[i]
		if st == nil || st.Topic != t.topic {
			resp.Topics = append(resp.Topics, kmsg.NewFetchResponseTopic())
			st = &resp.Topics[len(resp.Topics)-1]
			st.Topic = t.topic
		}
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = t.req.Partition
		n, err := s.readPartition(&sp, t, maxBytes-total, total == 0)
		if err != nil {
			sp.ErrorCode = errorCode(nil, err)
			stop = true
			if sp.ErrorCode == kerr.KafkaStorageError.Code {
				s.log.Error("fetch failed", "topic", t.topic, "partition", t.req.Partition, "err", err)
			}
		}
		total += n
		st.Partitions = append(st.Partitions, sp)
	}
	return total, stop
}

// readPartition fills sp with up to room bytes of t's records (at least one
// batch when first is set) and returns how many it took.
func (s *Server) readPartition(sp *kmsg.FetchResponseTopicPartition, t *fetchTarget, room int, first bool) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	sp.HighWatermark = t.part.HighWatermark()
	sp.LastStableOffset = sp.HighWatermark
	sp.LogStartOffset = t.part.StartOffset()
	limit := min(int(t.req.PartitionMaxBytes), room)
	if limit <= 0 && !first {
		return 0, nil
	}
	rd, err := t.part.Read(t.req.FetchOffset, max(limit, 1))
	if err != nil {
		return 0, err
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = rd.HighWatermark, rd.LastStableOffset, rd.LogStartOffset
	if len(rd.Records) > limit && !first {
		// Only the first partition with data may exceed the limits.
		return 0, nil
	}
	sp.RecordBatches = rd.Records
	return len(rd.Records), nil
}

// waitFetch blocks until some target partition has data past its fetch
// offset (true), or ctx ends or the server is closing (false).
func (s *Server) waitFetch(ctx context.Context, targets []fetchTarget) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	woke := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for i := range targets {
		t := &targets[i]
		if t.err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if t.part.WaitForData(ctx, t.req.FetchOffset) == nil {
				select {
				case woke <- struct{}{}:
				default:
				}
			}
		}()
	}
	defer wg.Wait()
	select {
	case <-woke:
		return true
	case <-ctx.Done():
		return false
	case <-s.quit:
		return false
	}
}
