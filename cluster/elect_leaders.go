package cluster

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ElectionType is ElectLeaders' ElectionType.
type ElectionType int8

const (
	// ElectPreferred moves a partition's leadership to its preferred
	// replica (the first of its assignment), which must be in the ISR and
	// active: a clean election.
	ElectPreferred ElectionType = 0
	// ElectUnclean elects a leader for a partition that has none: from
	// the ISR, then the ELR, then any active replica, which may lose
	// acknowledged records the new leader lacks. The operator's request
	// stands for unclean.leader.election.enable for this one election.
	ElectUnclean ElectionType = 1
)

// Elect decides one partition's ElectLeaders election: the ChangePartition
// record that elects its new leader (the leader epoch bumped), or why none
// is decided, wrapping a kerr value: UNKNOWN_TOPIC_OR_PARTITION,
// ELECTION_NOT_NEEDED (the preferred replica already leads; for unclean, a
// leader exists), PREFERRED_LEADER_NOT_AVAILABLE (it is out of the ISR,
// fenced or shutting down), ELIGIBLE_LEADERS_NOT_AVAILABLE (unclean: no
// replica is active), INVALID_REQUEST (an unknown election type). The
// election rules are those of every other election (elect.go); the
// controller's periodic Rebalance makes the same preferred decision.
func (s Settings) Elect(m *Metadata, typ ElectionType, topic string, partition int32) (Record, error) {
	t, ok := m.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return Record{}, fmt.Errorf("%s-%d: %w", topic, partition, kerr.UnknownTopicOrPartition)
	}
	switch typ {
	case ElectPreferred:
		return preferred(m, t, int(partition))
	case ElectUnclean:
		return unclean(m, t, int(partition))
	}
	return Record{}, fmt.Errorf("election type %d, want 0 (preferred) or 1 (unclean): %w", typ, kerr.InvalidRequest)
}

// preferred is the move of partition i's leadership to its preferred
// replica.
func preferred(m *Metadata, t *Topic, i int) (Record, error) {
	p := t.Partitions[i]
	pref := p.Replicas[0]
	switch {
	case p.Leader == pref:
		return Record{}, fmt.Errorf("%s-%d: broker %d, the preferred replica, already leads: %w", t.Name, i, pref, kerr.ElectionNotNeeded)
	case !slices.Contains(p.ISR, pref):
		return Record{}, fmt.Errorf("%s-%d: the preferred replica %d is not in the ISR %v: %w", t.Name, i, pref, p.ISR, kerr.PreferredLeaderNotAvailable)
	case !m.isActive(pref):
		return Record{}, fmt.Errorf("%s-%d: the preferred replica %d is fenced or shutting down: %w", t.Name, i, pref, kerr.PreferredLeaderNotAvailable)
	}
	st, _ := next(p, withLeader(p, pref, electISR))
	return change(t, i, st), nil
}

// unclean is the election of a leader for partition i, which has none,
// among every active replica if it must.
func unclean(m *Metadata, t *Topic, i int) (Record, error) {
	p := t.Partitions[i]
	if p.Leader != NoLeader {
		return Record{}, fmt.Errorf("%s-%d: broker %d leads: %w", t.Name, i, p.Leader, kerr.ElectionNotNeeded)
	}
	leader, kind := electLeader(p, m.isActive, true)
	if kind == electNone {
		return Record{}, fmt.Errorf("%s-%d: no replica of %v is active: %w", t.Name, i, p.Replicas, kerr.EligibleLeadersNotAvailable)
	}
	st, _ := next(p, withLeader(p, leader, kind))
	return change(t, i, st), nil
}

// Elected reports whether m shows partition's election of type typ done:
// deciding it again would find it not needed. A broker waits for this on
// its own image before it answers ElectLeaders, so that a Metadata request
// that follows shows the new leader.
func (s Settings) Elected(m *Metadata, typ ElectionType, topic string, partition int32) bool {
	_, err := s.Elect(m, typ, topic, partition)
	return code(err) == kerr.ElectionNotNeeded.Code
}

// ElectionsOf are the partitions an ElectLeaders request names, in its
// order; null topics (every partition of every topic) are expanded on m.
func ElectionsOf(m *Metadata, req *kmsg.ElectLeadersRequest) []kmsg.ElectLeadersRequestTopic {
	if req.Topics != nil {
		return req.Topics
	}
	var all []kmsg.ElectLeadersRequestTopic
	for _, t := range m.Topics() {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic = t.Name
		for i := range t.Partitions {
			rt.Partitions = append(rt.Partitions, int32(i))
		}
		all = append(all, rt)
	}
	return all
}

// TypeOf is req's election type: v0 knows only preferred elections.
func TypeOf(req *kmsg.ElectLeadersRequest) ElectionType {
	if req.Version == 0 {
		return ElectPreferred
	}
	return ElectionType(req.ElectionType)
}

// electLeaders serves ElectLeaders: every partition is decided on one
// image and the elections commit as one batch. A partition named twice is
// decided once and answered at each mention.
func (c *ControllerCore) electLeaders(o *Op, q Quorum, req *kmsg.ElectLeadersRequest) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	c.ready(o, q, func(err error) {
		typ := TypeOf(req)
		s := c.cfg.Settings.Dynamic(o.img)
		type tp struct {
			topic     string
			partition int32
		}
		decided := map[tp]error{}
		var recs []Record
		var elected []*kmsg.ElectLeadersResponseTopicPartition
		for _, rt := range ElectionsOf(o.img, req) {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, part := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition = part
				perr, seen := decided[tp{rt.Topic, part}]
				if !seen {
					var rec Record
					if perr = err; perr == nil {
						if rec, perr = s.Elect(o.img, typ, rt.Topic, part); perr == nil {
							recs = append(recs, rec)
						}
					}
					decided[tp{rt.Topic, part}] = perr
				}
				sp.ErrorCode, sp.ErrorMessage = code(perr), message(perr)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		resp.ErrorCode = code(err) // NOT_CONTROLLER, even with no partition to say it
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if sp := &resp.Topics[i].Partitions[j]; sp.ErrorCode == 0 {
					elected = append(elected, sp)
				}
			}
		}
		o.commit(recs, func(_ uint64, err error) {
			for _, sp := range elected {
				sp.ErrorCode, sp.ErrorMessage = code(err), message(err)
			}
			if err == nil && len(recs) > 0 {
				c.log.Info("elected leaders", "type", typ, "partitions", len(recs))
			}
			o.finish(resp, nil)
		})
	})
}
