package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeQuorum: v0-2
//
// Behaviour:
//   - The controller quorum as its leader sees it, for the one partition
//     Kafka names __cluster_metadata-0: the leader, its term as the leader
//     epoch, the commit index as the high watermark, and each voter with
//     the last index known replicated on it (LogEndOffset) and when the
//     leader last heard from it. No observers: every broker is a voter.
//   - A broker that does not lead the quorum forwards the request to the
//     one that does (on the controller listener, where the leader answers
//     and the others say NOT_CONTROLLER). No leader reachable:
//     NOT_CONTROLLER at the top.
//
// Version notes:
//   - v1: timestamps; v2: ErrorMessage, directory ids (zero), Nodes.

func init() {
	register(55, 0, 2, handleDescribeQuorum)
	registerController(55, 0, 2, handleDescribeQuorumHere)
}

const clusterMetadataTopic = "__cluster_metadata"

func handleDescribeQuorum(r *request) reply {
	req := r.body.(*kmsg.DescribeQuorumRequest)
	s := r.s
	if s.quorumActive() {
		return done(s.describeQuorum(req))
	}
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := withTimeout(ctx, s.cfg.Clock, 5*time.Second)
		defer cancel()
		resp, err := s.ctlClient.request(ctx, req)
		if err != nil {
			failed := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
			failed.ErrorCode = kerr.NotController.Code
			failed.ErrorMessage = errorMessage(err)
			return failed
		}
		return resp
	})
}

// handleDescribeQuorumHere answers on the controller listener: the leader
// describes the quorum, the others say NOT_CONTROLLER.
func handleDescribeQuorumHere(r *request) reply {
	req := r.body.(*kmsg.DescribeQuorumRequest)
	if !r.s.quorumActive() {
		resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode = kerr.NotController.Code
		return done(resp)
	}
	return done(r.s.describeQuorum(req))
}

func (s *Server) describeQuorum(req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	st := s.quorum.Status()
	now := s.cfg.Clock.Now()
	tick := s.cfg.Cluster.TickInterval
	if tick <= 0 {
		tick = 50 * time.Millisecond
	}
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewDescribeQuorumResponseTopicPartition()
			p.Partition = rp.Partition
			if rt.Topic != clusterMetadataTopic || rp.Partition != 0 {
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
				t.Partitions = append(t.Partitions, p)
				continue
			}
			p.LeaderID, p.LeaderEpoch, p.HighWatermark = nodeID(st.Leader), int32(st.Term), int64(st.Commit)
			for _, peer := range st.Peers {
				v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
				v.ReplicaID, v.LogEndOffset = nodeID(peer.ID), int64(peer.Match)
				v.LastFetchTimestamp, v.LastCaughtUpTimestamp = -1, -1
				if peer.TicksSinceContact >= 0 {
					seen := now.Add(-time.Duration(peer.TicksSinceContact) * tick).UnixMilli()
					v.LastFetchTimestamp = seen
					if peer.Match >= st.Commit {
						v.LastCaughtUpTimestamp = seen
					}
				}
				p.CurrentVoters = append(p.CurrentVoters, v)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	for _, v := range s.cfg.voters() {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = v.ID
		if host, port, err := splitHostPort(v.Addr); err == nil {
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(port)
			n.Listeners = append(n.Listeners, l)
		}
		resp.Nodes = append(resp.Nodes, n)
	}
	return resp
}
