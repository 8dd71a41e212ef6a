package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
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
//   - A voter that is not the leader, asked on its controller listener,
//     says NOT_CONTROLLER at the top and, as Kafka's followers do,
//     NOT_LEADER_OR_FOLLOWER for the partition with the leader it knows
//     (-1 for none) and its term; it lists the voters (CurrentVoters, with
//     no offsets, and Nodes), which a broker outside the quorum checks its
//     own -controllers list against.
//
// Version notes:
//   - v1: timestamps; v2: ErrorMessage, directory ids (zero), Nodes.

func init() {
	register(55, 0, 2, handleDescribeQuorum)
	registerController(55, 0, 2, handleDescribeQuorumHere)
}

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
		return done(r.s.describeQuorumElsewhere(req))
	}
	return done(r.s.describeQuorum(req))
}

// describeQuorumElsewhere is a voter's answer while another one leads (or
// none does).
func (s *Server) describeQuorumElsewhere(req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	if s.quorum == nil {
		resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	st := s.quorum.Status()
	leader := int32(-1)
	if st.Leader != 0 {
		leader = nodeID(st.Leader)
	}
	var voters []int32
	for _, v := range s.cfg.voters() {
		voters = append(voters, v.ID)
	}
	resp := node.DescribeQuorum(req, func(p *kmsg.DescribeQuorumResponseTopicPartition) {
		node.DescribeAsFollower(p, leader, st.Term, voters)
	})
	resp.ErrorCode = kerr.NotController.Code
	resp.Nodes = s.quorumNodes()
	return resp
}

func (s *Server) describeQuorum(req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	st := s.quorum.Status()
	now := s.cfg.Clock.Now()
	tick := s.cfg.Cluster.TickInterval
	if tick <= 0 {
		tick = 50 * time.Millisecond
	}
	resp := node.DescribeQuorum(req, func(p *kmsg.DescribeQuorumResponseTopicPartition) {
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
	})
	resp.Nodes = s.quorumNodes()
	return resp
}

// quorumNodes lists the voters with their controller listeners (v2's
// Nodes).
func (s *Server) quorumNodes() []kmsg.DescribeQuorumResponseNode {
	var out []kmsg.DescribeQuorumResponseNode
	for _, v := range s.cfg.voters() {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = v.ID
		if host, port, err := splitHostPort(v.Addr); err == nil {
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(port)
			n.Listeners = append(n.Listeners, l)
		}
		out = append(out, n)
	}
	return out
}
