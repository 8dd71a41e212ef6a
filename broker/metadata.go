package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
)

// Brokers that are not voters follow the metadata log as KRaft's observers
// do, with Kafka's Fetch on the topic __cluster_metadata, partition 0, sent
// to a voter's controller listener: each committed batch of the log is a
// record at its offset (the raft index). The voter serves them from the
// batches its Store keeps (cluster.Store.Since); a follower older than
// those gets OFFSET_OUT_OF_RANGE and fetches the snapshot instead
// (FetchSnapshot: the voter's current image), then goes on from its
// offset. What it fetches it applies to its own Store, exactly as the
// voters apply it, so its image is one the voters had.

func init() {
	registerController(1, 12, 15, handleMetadataFetch)
	registerController(59, 0, 1, handleFetchSnapshot)
}

// clusterMetadataID is __cluster_metadata's topic id, as KRaft fixes it.
var clusterMetadataID = [16]byte{15: 1}

// metadataFetchBytes bounds one metadata fetch's payloads.
const metadataFetchBytes = 4 << 20

// handleMetadataFetch serves a follower's fetch of the metadata log,
// waiting up to MaxWaitMillis for something past its offset.
func handleMetadataFetch(r *request) reply {
	req := r.body.(*kmsg.FetchRequest)
	s := r.s
	return later(func(ctx context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		var from int64 = -1
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				if (rt.Topic == clusterMetadataTopic || rt.TopicID == clusterMetadataID) && rp.Partition == 0 {
					from = rp.FetchOffset
				}
			}
		}
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = clusterMetadataTopic, clusterMetadataID
		sp := kmsg.NewFetchResponseTopicPartition()
		if from < 0 {
			sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		} else {
			s.serveMetadata(ctx, &sp, uint64(from), time.Duration(req.MaxWaitMillis)*time.Millisecond)
		}
		st.Partitions = append(st.Partitions, sp)
		resp.Topics = append(resp.Topics, st)
		return resp
	})
}

// serveMetadata fills sp with the batches of the metadata log from offset
// from, waiting up to wait for one.
func (s *Server) serveMetadata(ctx context.Context, sp *kmsg.FetchResponseTopicPartition, from uint64, wait time.Duration) {
	ctx, cancel := withTimeout(ctx, s.cfg.Clock, wait)
	defer cancel()
	for {
		changed := s.store.Changed()
		img := s.store.Image()
		sp.HighWatermark, sp.LastStableOffset = int64(img.Offset())+1, int64(img.Offset())+1
		entries, ok := s.store.Since(from, metadataFetchBytes)
		if !ok {
			sp.ErrorCode = kerr.OffsetOutOfRange.Code
			return
		}
		if len(entries) > 0 {
			now := s.cfg.Clock.Now()
			var out []byte
			for _, e := range entries {
				b := batch.Encode([]batch.KV{{Value: e.Payload}}, now)
				batch.SetBaseOffset(b, int64(e.Offset))
				out = append(out, b...)
			}
			sp.RecordBatches = out
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-s.quit:
			return
		}
	}
}

// handleFetchSnapshot sends the current image, whole, as the snapshot a
// follower that is too far behind restores.
func handleFetchSnapshot(r *request) reply {
	req := r.body.(*kmsg.FetchSnapshotRequest)
	resp := req.ResponseKind().(*kmsg.FetchSnapshotResponse)
	st := kmsg.NewFetchSnapshotResponseTopic()
	st.Topic = clusterMetadataTopic
	sp := kmsg.NewFetchSnapshotResponseTopicPartition()
	img := r.s.store.Image()
	data, err := img.MarshalSnapshot()
	if err != nil {
		sp.ErrorCode = kerr.UnknownServerError.Code
	} else {
		sp.SnapshotID.EndOffset, sp.Size, sp.Bytes = int64(img.Offset()), int64(len(data)), data
	}
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	return done(resp)
}

// followMetadata is a broker that is not a voter keeping its Store up with
// the voters' metadata log until ctx ends.
func (s *Server) followMetadata(ctx context.Context) {
	for ctx.Err() == nil {
		if err := s.fetchMetadata(ctx); err != nil && ctx.Err() == nil {
			s.log.Debug("fetching the metadata log", "err", err)
			s.pause(retryBackoff * 4)
		}
	}
}

var errMetadataSnapshot = errors.New("metadata log older than the voter keeps")

// fetchMetadata fetches once from a voter and applies what came.
func (s *Server) fetchMetadata(ctx context.Context) error {
	voter := s.ctlClient.roundRobin()
	if id, ok := s.activeController(); ok {
		voter = id
	}
	cl, err := s.ctlClient.client(voter)
	if err != nil {
		return err
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return errNoController
	}
	from := s.store.Image().Offset() + 1
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(15)
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = s.cfg.NodeID, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, metadataFetchBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = clusterMetadataTopic, clusterMetadataID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.LastFetchedEpoch = int64(from), metadataFetchBytes, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := seeds[0].Request(rctx, req)
	if err != nil {
		return fmt.Errorf("voter %d: %w", voter, err)
	}
	resp := r.(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("voter %d answered %d topics", voter, len(resp.Topics))
	}
	sp := resp.Topics[0].Partitions[0]
	switch err := kerr.ErrorForCode(sp.ErrorCode); {
	case errors.Is(err, kerr.OffsetOutOfRange):
		return s.restoreMetadata(ctx, seeds[0].Request)
	case err != nil:
		return fmt.Errorf("voter %d: %w", voter, err)
	}
	var applyErr error
	_, err = batch.Records(sp.RecordBatches, func(off int64, rec kmsg.Record) {
		if applyErr == nil && uint64(off) > s.store.Image().Offset() {
			applyErr = s.store.Apply(uint64(off), rec.Value)
		}
	}, func(err error) { applyErr = err })
	if err != nil {
		return fmt.Errorf("metadata from voter %d: %w", voter, err)
	}
	return applyErr
}

// restoreMetadata fetches the voter's snapshot and restores it.
func (s *Server) restoreMetadata(ctx context.Context, send func(context.Context, kmsg.Request) (kmsg.Response, error)) error {
	req := kmsg.NewPtrFetchSnapshotRequest()
	req.SetVersion(req.MaxVersion())
	req.ReplicaID, req.MaxBytes = s.cfg.NodeID, 1<<30
	rt := kmsg.NewFetchSnapshotRequestTopic()
	rt.Topic = clusterMetadataTopic
	rt.Partitions = append(rt.Partitions, kmsg.NewFetchSnapshotRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := send(rctx, req)
	if err != nil {
		return fmt.Errorf("%w: %w", errMetadataSnapshot, err)
	}
	resp := r.(*kmsg.FetchSnapshotResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("%w: %d topics in the answer", errMetadataSnapshot, len(resp.Topics))
	}
	sp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
		return fmt.Errorf("%w: %w", errMetadataSnapshot, err)
	}
	if uint64(sp.SnapshotID.EndOffset) <= s.store.Image().Offset() {
		return nil
	}
	s.log.Info("restoring the metadata snapshot of a voter", "offset", sp.SnapshotID.EndOffset, "bytes", len(sp.Bytes))
	return s.store.Restore(uint64(sp.SnapshotID.EndOffset), sp.Bytes)
}
