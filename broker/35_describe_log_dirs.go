package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
)

// DescribeLogDirs: v0-4
//
// Behaviour:
//   - Answered by each broker for its own data directory (Config.Dir, the
//     one log dir it has): the partitions it holds a replica of, leader or
//     follower. Clients ask every broker (kadm.DescribeAllLogDirs).
//   - Topics null: every partition held; otherwise those named that this
//     broker holds (the others are left out, as Kafka does).
//   - Per partition: Size, the bytes the log takes
//     (partition.Partition.SizeBytes: the segment files on the segment
//     engine; on engines that share files among logs, the bytes of the
//     committed batches as stored); OffsetLag, 0 on the leader and on a
//     follower the leader's high watermark as of its last fetch response
//     minus its log end (Partition.OffsetLag); IsFuture false (no replica
//     moves between directories).
//   - A size this broker cannot read (the log failed): the directory's
//     ErrorCode is KAFKA_STORAGE_ERROR, the other partitions still listed.
//
// Version notes:
//   - v1: no change; v2: flexible; v3: the top-level ErrorCode; v4:
//     TotalBytes and UsableBytes of the directory's file system (statfs;
//     -1 where it cannot be read).

func init() { register(35, 0, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(r *request) reply {
	req := r.body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	s := r.s
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = s.cfg.Dir
	dir.TotalBytes, dir.UsableBytes = volumeBytes(s.cfg.Dir)
	byTopic := map[string]int{} // index in dir.Topics
	for _, p := range s.describedPartitions(req) {
		size, err := p.SizeBytes()
		if err != nil {
			s.log.Warn("describe log dirs: no size", "topic", p.Topic(), "partition", p.Index(), "err", err)
			dir.ErrorCode = kerr.KafkaStorageError.Code
			continue
		}
		i, ok := byTopic[p.Topic()]
		if !ok {
			i = len(dir.Topics)
			byTopic[p.Topic()] = i
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = p.Topic()
			dir.Topics = append(dir.Topics, dt)
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition, dp.Size, dp.OffsetLag, dp.IsFuture = p.Index(), size, p.OffsetLag(), false
		dir.Topics[i].Partitions = append(dir.Topics[i].Partitions, dp)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return done(resp)
}

// describedPartitions are the partitions req asks about that this broker
// holds, in key order (topics null: all of them).
func (s *Server) describedPartitions(req *kmsg.DescribeLogDirsRequest) []*partition.Partition {
	var out []*partition.Partition
	if req.Topics == nil {
		for _, k := range s.parts.Keys() {
			if p, ok := s.parts.Get(k); ok {
				out = append(out, p)
			}
		}
		return out
	}
	for _, rt := range req.Topics {
		for _, i := range rt.Partitions {
			if p, err := s.parts.Partition(rt.Topic, i); err == nil && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
