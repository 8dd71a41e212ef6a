package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/bufpool"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/replication"
)

// A follower's fetch at its leader (Fetch with a replica id): each
// partition is served by its leader's replication state machine
// (Partition.ServeFollower), up to the leader's log end rather than the
// high watermark, with the high watermark and log start for the follower
// to follow, or a diverging epoch (KIP-320) for it to truncate to. The
// fetch counts toward the ISR and the high watermark. A long poll waits
// for the leader's log end to pass a follower's fetch offset (new
// appends wake it, the high watermark moving does not), but an answer with
// news for the follower goes at once: an error or a diverging epoch (a
// follower that asked a moment before this broker learnt it leads would
// otherwise wait out the poll, then its backoff, then the next poll), or a
// log start past the one it fetched with (DeleteRecords waits for the
// follower to take it: ~5 ms instead of the 500 ms poll).

// Target is one partition a Fetch names, resolved.
type Target struct {
	Topic   string
	TopicID [16]byte
	Req     *kmsg.FetchRequestTopicPartition
	Part    *partition.Partition // nil when the partition is not here
	Err     error                // resolving error, sticky for the request
	// Throttle is the leader's replication quota when this partition's
	// copy to the follower is throttled (leader.replication.throttled.rate:
	// the partition is listed for this broker and the follower is out of
	// its ISR), nil otherwise. It does not hold a follower that fetches
	// from the high watermark on. While it is exceeded the follower's fetch
	// still counts (its offset, the ISR) but gets no records, and the long
	// poll does not end for this partition's data (held).
	Throttle *Quota
	held     bool
}

// ResolveTargets resolves the partitions req names against img: topics by
// name before v13 and by id from v13 (a topic id no topic has gets
// UNKNOWN_TOPIC_ID). Targets keep the request's order, a topic's
// partitions together. The partitions themselves are the caller's to find.
func ResolveTargets(img *cluster.Metadata, req *kmsg.FetchRequest) []Target {
	var targets []Target
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		name, id := rt.Topic, rt.TopicID
		var err error
		if req.Version >= 13 {
			if t, ok := img.TopicByID(id); ok {
				name = t.Name
			} else {
				err = kerr.UnknownTopicID
			}
		} else if t, ok := img.Topic(name); ok {
			id = t.ID
		}
		for pi := range rt.Partitions {
			targets = append(targets, Target{Topic: name, TopicID: id, Req: &rt.Partitions[pi], Err: err})
		}
	}
	return targets
}

// ReplicaOf is the replica id and broker epoch of a follower's fetch: -1
// for a consumer's.
func ReplicaOf(req *kmsg.FetchRequest) (int32, int64) {
	if req.Version >= 15 {
		return req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	return req.ReplicaID, -1
}

// ResponseTopic is the topic of resp that t's partition goes in: last, the
// one the target before t went in, when t is of the same topic, else a new
// one appended.
func ResponseTopic(resp *kmsg.FetchResponse, last *kmsg.FetchResponseTopic, t *Target) *kmsg.FetchResponseTopic {
	if last != nil && last.Topic == t.Topic && last.TopicID == t.TopicID {
		return last
	}
	resp.Topics = append(resp.Topics, kmsg.NewFetchResponseTopic())
	st := &resp.Topics[len(resp.Topics)-1]
	st.Topic, st.TopicID = t.Topic, t.TopicID
	return st
}

// ServeFollower (re)builds resp from each partition's leader for follower
// replica at brokerEpoch, within maxBytes in all (the first partition with
// data gets at least one batch). It returns the record bytes gathered,
// whether some partition has news without records that the follower must
// get at once, and the partitions whose storage failed (for the log).
func ServeFollower(resp *kmsg.FetchResponse, targets []Target, replica int32, brokerEpoch int64, maxBytes int, now time.Time, lease *bufpool.Lease) (got int, news bool, failed []Failed) {
	resp.Topics = resp.Topics[:0]
	var st *kmsg.FetchResponseTopic
	for i := range targets {
		t := &targets[i]
		st = ResponseTopic(resp, st, t)
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = t.Req.Partition
		if t.Err != nil {
			sp.ErrorCode = ErrorCode(t.Err)
			st.Partitions = append(st.Partitions, sp)
			news = true
			continue
		}
		room := maxBytes - got
		limit := max(min(int(t.Req.PartitionMaxBytes), room), 1)
		t.held = false
		// A follower at the high watermark is not throttled: it is about
		// to join the ISR, or has and this broker's image lags.
		if t.Throttle != nil && t.Req.FetchOffset < t.Part.HighWatermark() {
			if a := t.Throttle.Allowance(now); a <= 0 {
				t.held, limit = true, partition.NoRecords
			} else {
				limit = int(min(int64(limit), a))
			}
		}
		rd, err := t.Part.ServeFollowerLeased(replication.FollowerFetch{
			Replica: replica, BrokerEpoch: brokerEpoch, CurrentLeaderEpoch: t.Req.CurrentLeaderEpoch,
			FetchOffset: t.Req.FetchOffset, LastFetchedEpoch: t.Req.LastFetchedEpoch,
			LogStartOffset: t.Req.LogStartOffset, Now: now,
		}, limit, lease)
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = rd.HighWatermark, rd.HighWatermark, rd.LogStartOffset
		if err != nil {
			news = true
			sp.ErrorCode = ErrorCode(err)
			if sp.ErrorCode == kerr.KafkaStorageError.Code {
				failed = append(failed, Failed{t, err})
			}
		}
		if rp := t.Req; rp.LogStartOffset >= 0 && rd.LogStartOffset > rp.LogStartOffset {
			news = true // a new log start: DeleteRecords waits for the follower to take it
		}
		if d := rd.Diverging; d != nil {
			news = true
			sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = d.Epoch, d.EndOffset
		}
		if n := len(rd.Records); got == 0 || got+n <= maxBytes {
			sp.RecordBatches = rd.Records
			got += n
			if t.Throttle != nil {
				t.Throttle.Record(now, n)
			}
		}
		st.Partitions = append(st.Partitions, sp)
	}
	return got, news, failed
}

// Failed is a partition whose storage failed while it was read.
type Failed struct {
	Target *Target
	Err    error
}

// AnswerFollowerNow reports whether a follower's fetch that gathered got
// bytes, with news or not, is answered now rather than parked for its
// long poll.
func AnswerFollowerNow(req *kmsg.FetchRequest, got int, news bool) bool {
	return got >= int(req.MinBytes) || got > 0 || news || req.MaxWaitMillis <= 0
}

// FollowerDataReady reports whether some partition of a parked follower
// fetch has data past the offset it asked for, or a log start past the
// follower's: the long poll ends. A partition the throttle held in the
// last ServeFollower does not end it.
func FollowerDataReady(targets []Target) bool {
	return slices.ContainsFunc(targets, func(t Target) bool {
		return t.Err == nil && t.Part != nil && !t.held && t.Part.FollowerDataReady(t.Req.FetchOffset, t.Req.LogStartOffset)
	})
}

// Partitions finds the partitions a broker holds (a partition.Manager).
type Partitions interface {
	Partition(topic string, index int32) (*partition.Partition, error)
}

// LookupPartition is topic's partition index on broker self, or the
// error a client or follower is answered with: NOT_LEADER_OR_FOLLOWER
// when the metadata has the partition but this broker does not hold it
// (it refreshes its metadata), UNKNOWN_TOPIC_OR_PARTITION when the
// metadata does not have it.
func LookupPartition(parts Partitions, img *cluster.Metadata, topic string, index int32) (*partition.Partition, error) {
	if p, err := parts.Partition(topic, index); err == nil {
		return p, nil
	}
	t, ok := img.Topic(topic)
	if !ok || index < 0 || int(index) >= len(t.Partitions) {
		return nil, fmt.Errorf("partition %s-%d: %w", topic, index, kerr.UnknownTopicOrPartition)
	}
	return nil, fmt.Errorf("partition %s-%d is led by broker %d: %w", topic, index, t.Partitions[index].Leader, kerr.NotLeaderForPartition)
}
