package node

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/cluster"
)

// Brokers that are not voters follow the metadata log as KRaft's observers
// do, with Kafka's Fetch on the topic __cluster_metadata, partition 0, sent
// to a voter's controller listener: each committed batch of the log is a
// record at its offset (the raft index). The voter serves them from the
// batches its Store keeps (ServeMetadata over cluster.Store.Since); a
// follower older than those gets OFFSET_OUT_OF_RANGE and fetches the
// snapshot instead (FetchSnapshot: the voter's current image, Snapshot),
// then goes on from its offset. What it fetches it applies to its own
// Store, exactly as the voters apply it, so its image is one the voters
// had.

// ClusterMetadataTopic is the metadata log's topic, and ClusterMetadataID
// its topic id, as KRaft fixes them.
const ClusterMetadataTopic = clusterMetadataTopic

var ClusterMetadataID = [16]byte{15: 1}

const (
	// MetadataFetchBytes bounds one metadata fetch's payloads.
	MetadataFetchBytes = 4 << 20
	// MetadataFetchWait is a metadata fetch's long poll.
	MetadataFetchWait = 500 * time.Millisecond
	// metadataBackoff is the pause after a failed metadata fetch.
	metadataBackoff = 200 * time.Millisecond
	metadataTimeout = 10 * time.Second
	snapshotTimeout = 30 * time.Second
)

// MetadataFollower keeps a Store up with the voters' metadata log. The
// driver sends what Next returns to the voter the Call names (To: the
// Router's pick) and hands the answer to Answer. One call in flight; one
// driver goroutine at a time.
type MetadataFollower struct {
	self   int32
	store  *cluster.Store
	log    *slog.Logger
	busy   bool
	nextAt time.Time
	// snapshotFrom: the last fetch was answered OFFSET_OUT_OF_RANGE by
	// this voter (-1: none), whose snapshot is the next call.
	snapshotFrom int32
}

// NewMetadataFollower follows the metadata log into store for broker self.
func NewMetadataFollower(self int32, store *cluster.Store, log *slog.Logger) *MetadataFollower {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &MetadataFollower{self: self, store: store, log: log, snapshotFrom: -1}
}

// NextWake is when Next may have a call again after a failure.
func (m *MetadataFollower) NextWake() time.Time { return m.nextAt }

// Next is the fetch to send to voter (the Router's pick), if one is due.
func (m *MetadataFollower) Next(now time.Time, voter int32) (Call, bool) {
	if m.busy || now.Before(m.nextAt) {
		return Call{}, false
	}
	m.busy = true
	if m.snapshotFrom >= 0 {
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.SetVersion(req.MaxVersion())
		req.ReplicaID, req.MaxBytes = m.self, 1<<30
		rt := kmsg.NewFetchSnapshotRequestTopic()
		rt.Topic = clusterMetadataTopic
		rt.Partitions = append(rt.Partitions, kmsg.NewFetchSnapshotRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		return Call{Req: req, To: m.snapshotFrom, Timeout: snapshotTimeout}, true
	}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(15)
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = m.self, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(MetadataFetchWait/time.Millisecond), 1, MetadataFetchBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = clusterMetadataTopic, ClusterMetadataID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.LastFetchedEpoch = int64(m.store.Image().Offset()+1), MetadataFetchBytes, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return Call{Req: req, To: voter, Timeout: metadataTimeout}, true
}

var errMetadataSnapshot = errors.New("metadata log older than the voter keeps")

// Answer applies the voter's answer to the store; an error says why
// nothing was (the next fetch waits a backoff).
func (m *MetadataFollower) Answer(now time.Time, c Call, resp kmsg.Response, err error) error {
	m.busy = false
	switch {
	case err == nil && c.Req.Key() == kmsg.FetchSnapshot.Int16():
		err = m.restore(c.To, resp)
	case err == nil:
		err = m.apply(c.To, resp)
	}
	if err != nil {
		m.nextAt = now.Add(metadataBackoff)
		m.log.Debug("fetching the metadata log", "err", err)
	}
	return err
}

func (m *MetadataFollower) apply(voter int32, r kmsg.Response) error {
	resp, ok := r.(*kmsg.FetchResponse)
	if !ok || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("voter %d answered %T without the metadata partition", voter, r)
	}
	sp := resp.Topics[0].Partitions[0]
	switch err := kerr.ErrorForCode(sp.ErrorCode); {
	case errors.Is(err, kerr.OffsetOutOfRange):
		m.snapshotFrom = voter
		return nil
	case err != nil:
		return fmt.Errorf("voter %d: %w", voter, err)
	}
	var applyErr error
	_, err := batch.Records(sp.RecordBatches, func(off int64, rec kmsg.Record) {
		if applyErr == nil && uint64(off) > m.store.Image().Offset() {
			applyErr = m.store.Apply(uint64(off), rec.Value)
		}
	}, func(err error) { applyErr = err })
	if err != nil {
		return fmt.Errorf("metadata from voter %d: %w", voter, err)
	}
	return applyErr
}

func (m *MetadataFollower) restore(voter int32, r kmsg.Response) error {
	m.snapshotFrom = -1
	resp, ok := r.(*kmsg.FetchSnapshotResponse)
	if !ok || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("%w: voter %d answered %T without the metadata partition", errMetadataSnapshot, voter, r)
	}
	sp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
		return fmt.Errorf("%w: %w", errMetadataSnapshot, err)
	}
	if uint64(sp.SnapshotID.EndOffset) <= m.store.Image().Offset() {
		return nil
	}
	m.log.Info("restoring the metadata snapshot of a voter", "voter", voter, "offset", sp.SnapshotID.EndOffset, "bytes", len(sp.Bytes))
	return m.store.Restore(uint64(sp.SnapshotID.EndOffset), sp.Bytes)
}

// MetadataFrom is the offset a metadata fetch asks from, -1 when it does not
// name the metadata partition.
func MetadataFrom(req *kmsg.FetchRequest) int64 {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if (rt.Topic == clusterMetadataTopic || rt.TopicID == ClusterMetadataID) && rp.Partition == 0 {
				return rp.FetchOffset
			}
		}
	}
	return -1
}

// ServeMetadata is a voter's answer to a metadata fetch from offset from:
// the committed batches it keeps from there, each a record at its offset,
// stamped now. ready is false when there is none yet (the caller parks the
// fetch until the store changes, up to its long poll, and asks again).
func ServeMetadata(store *cluster.Store, req *kmsg.FetchRequest, now time.Time) (resp *kmsg.FetchResponse, ready bool) {
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	st := kmsg.NewFetchResponseTopic()
	st.Topic, st.TopicID = clusterMetadataTopic, ClusterMetadataID
	sp := kmsg.NewFetchResponseTopicPartition()
	ready = true
	if from := MetadataFrom(req); from < 0 {
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
	} else {
		img := store.Image()
		sp.HighWatermark, sp.LastStableOffset = int64(img.Offset())+1, int64(img.Offset())+1
		entries, ok := store.Since(uint64(from), MetadataFetchBytes)
		switch {
		case !ok:
			sp.ErrorCode = kerr.OffsetOutOfRange.Code
		case len(entries) == 0:
			ready = false
		default:
			var out []byte
			for _, e := range entries {
				b := batch.Encode([]batch.KV{{Value: e.Payload}}, now)
				batch.SetBaseOffset(b, int64(e.Offset))
				out = append(out, b...)
			}
			sp.RecordBatches = out
		}
	}
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	return resp, ready
}

// Snapshot is a voter's answer to FetchSnapshot: its current image, whole,
// as the snapshot a follower too far behind restores.
func Snapshot(store *cluster.Store, req *kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse {
	resp := req.ResponseKind().(*kmsg.FetchSnapshotResponse)
	st := kmsg.NewFetchSnapshotResponseTopic()
	st.Topic = clusterMetadataTopic
	sp := kmsg.NewFetchSnapshotResponseTopicPartition()
	img := store.Image()
	data, err := img.MarshalSnapshot()
	if err != nil {
		sp.ErrorCode = kerr.UnknownServerError.Code
	} else {
		sp.SnapshotID.EndOffset, sp.Size, sp.Bytes = int64(img.Offset()), int64(len(data)), data
	}
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	return resp
}

// DescribeQuorum is a voter's answer to req: fill describes the metadata
// partition (__cluster_metadata-0); any other partition req names gets
// UNKNOWN_TOPIC_OR_PARTITION.
func DescribeQuorum(req *kmsg.DescribeQuorumRequest, fill func(*kmsg.DescribeQuorumResponseTopicPartition)) *kmsg.DescribeQuorumResponse {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewDescribeQuorumResponseTopicPartition()
			p.Partition = rp.Partition
			if rt.Topic == clusterMetadataTopic && rp.Partition == 0 {
				fill(&p)
			} else {
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// DescribeAsFollower fills the metadata partition of a DescribeQuorum
// answer as a voter that does not lead the quorum does, as Kafka's
// followers do: NOT_LEADER_OR_FOLLOWER, the leader it knows (-1: none)
// and its term, and the voters with no offsets, which a broker outside
// the quorum checks its own voter list against (QuorumVoters).
func DescribeAsFollower(p *kmsg.DescribeQuorumResponseTopicPartition, leader int32, term uint64, voters []int32) {
	p.ErrorCode = kerr.NotLeaderForPartition.Code
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = leader, int32(term), -1
	for _, id := range voters {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.LogEndOffset = id, -1
		p.CurrentVoters = append(p.CurrentVoters, rs)
	}
}
