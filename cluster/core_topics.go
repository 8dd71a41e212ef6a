package cluster

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopics decides every topic of the request on one image and commits
// the valid ones as one batch: one round trip to the quorum however many
// topics are created.
func (c *ControllerCore) createTopics(o *Op, q Quorum, req *kmsg.CreateTopicsRequest) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	c.ready(o, q, func(err error) {
		img := o.img
		var recs []Record
		var created []int // index in resp.Topics of each record
		seen := map[string]int{}
		for _, rt := range req.Topics {
			seen[rt.Topic]++
		}
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			terr := err
			if terr == nil && seen[rt.Topic] > 1 {
				terr = fmt.Errorf("topic %q named more than once: %w", rt.Topic, kerr.InvalidRequest)
			}
			var rec Record
			if terr == nil {
				rec, terr = c.cfg.Settings.CreateTopic(img, newTopic(rt), c.rnd)
			}
			if terr != nil {
				st.ErrorCode, st.ErrorMessage = code(terr), message(terr)
			} else if !req.ValidateOnly {
				recs = append(recs, rec)
				created = append(created, len(resp.Topics))
			} else {
				fillCreated(&st, &Topic{Name: rt.Topic, Configs: rec.CreateTopic.Configs, Partitions: rec.CreateTopic.Partitions}, c.cfg.Settings.Dynamic(img))
				st.TopicID = [16]byte{}
			}
			resp.Topics = append(resp.Topics, st)
		}
		o.commit(recs, func(_ uint64, err error) {
			for _, i := range created {
				st := &resp.Topics[i]
				t, ok := o.img.Topic(st.Topic)
				if err == nil && !ok {
					err = fmt.Errorf("topic %q is gone: %w", st.Topic, kerr.RequestTimedOut)
				}
				if err != nil {
					st.ErrorCode, st.ErrorMessage = code(err), message(err)
					continue
				}
				fillCreated(st, t, c.cfg.Settings.Dynamic(o.img))
				c.log.Info("created topic", "topic", t.Name, "id", t.ID, "partitions", len(t.Partitions), "replication", len(t.Partitions[0].Replicas))
			}
			o.finish(resp, nil)
		})
	})
}

func (c *ControllerCore) deleteTopics(o *Op, q Quorum, req *kmsg.DeleteTopicsRequest) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	c.ready(o, q, func(err error) {
		img := o.img
		topics := req.Topics
		for _, name := range req.TopicNames { // v0-5
			topics = append(topics, kmsg.DeleteTopicsRequestTopic{Topic: &name})
		}
		var recs []Record
		var deleted []int
		for _, rt := range topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			terr := err
			var rec Record
			if terr == nil {
				rec, terr = deleteOf(c.cfg.Settings, img, rt)
			}
			if terr == nil {
				t, _ := img.TopicByID(rec.DeleteTopic.TopicID)
				name := t.Name
				st.Topic, st.TopicID = &name, t.ID
				recs = append(recs, rec)
				deleted = append(deleted, len(resp.Topics))
			}
			st.ErrorCode, st.ErrorMessage = code(terr), message(terr)
			resp.Topics = append(resp.Topics, st)
		}
		o.commit(recs, func(_ uint64, err error) {
			for _, i := range deleted {
				if err != nil {
					resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = code(err), message(err)
					continue
				}
				c.log.Info("deleted topic", "topic", *resp.Topics[i].Topic)
			}
			o.finish(resp, nil)
		})
	})
}

func (c *ControllerCore) createPartitions(o *Op, q Quorum, req *kmsg.CreatePartitionsRequest) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	c.ready(o, q, func(err error) {
		seen := map[string]int{}
		for _, rt := range req.Topics {
			seen[rt.Topic]++
		}
		c.createPartitionsEach(o, req, resp, req.Topics, seen, err)
	})
}

// createPartitionsEach decides and commits one topic at a time: each
// decision sees the last applied.
func (c *ControllerCore) createPartitionsEach(o *Op, req *kmsg.CreatePartitionsRequest, resp *kmsg.CreatePartitionsResponse,
	todo []kmsg.CreatePartitionsRequestTopic, seen map[string]int, readyErr error) {
	if len(todo) == 0 {
		o.finish(resp, nil)
		return
	}
	rt := todo[0]
	answer := func(terr error) {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		st.ErrorCode, st.ErrorMessage = code(terr), message(terr)
		resp.Topics = append(resp.Topics, st)
		c.createPartitionsEach(o, req, resp, todo[1:], seen, readyErr)
	}
	terr := readyErr
	if terr == nil && seen[rt.Topic] > 1 {
		terr = fmt.Errorf("topic %q named more than once: %w", rt.Topic, kerr.InvalidRequest)
	}
	if terr != nil {
		answer(terr)
		return
	}
	var assignment [][]int32
	for _, a := range rt.Assignment {
		assignment = append(assignment, a.Replicas)
	}
	rec, terr := c.cfg.Settings.AddPartitions(o.img, rt.Topic, rt.Count, assignment, c.rnd)
	if terr != nil || req.ValidateOnly {
		answer(terr)
		return
	}
	o.commit([]Record{rec}, func(_ uint64, err error) { answer(err) })
}

// newTopic reads one topic of a CreateTopics request.
func newTopic(rt kmsg.CreateTopicsRequestTopic) NewTopic {
	nt := NewTopic{Name: rt.Topic, Partitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor, Configs: map[string]*string{}}
	for _, a := range rt.ReplicaAssignment {
		nt.Assignment = append(nt.Assignment, a.Replicas)
	}
	for _, cfg := range rt.Configs {
		nt.Configs[cfg.Name] = cfg.Value
	}
	return nt
}

// fillCreated describes a created topic (v5+: its partitions, replication
// and configs; v7+: its id).
func fillCreated(st *kmsg.CreateTopicsResponseTopic, t *Topic, s Settings) {
	st.TopicID = t.ID
	st.NumPartitions = int32(len(t.Partitions))
	st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
	for _, e := range ConfigEntries(t, s) {
		cfg := kmsg.NewCreateTopicsResponseTopicConfig()
		value := e.Value
		cfg.Name, cfg.Value = e.Name, &value
		cfg.Source = int8(kmsg.ConfigSourceDefaultConfig)
		if !e.Default {
			cfg.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
		}
		st.Configs = append(st.Configs, cfg)
	}
}

// deleteOf decides deleting the topic rt names, by name or (v6+) by id.
func deleteOf(s Settings, img *Metadata, rt kmsg.DeleteTopicsRequestTopic) (Record, error) {
	if (rt.Topic == nil || *rt.Topic == "") && rt.TopicID == [16]byte{} {
		return Record{}, fmt.Errorf("a topic with neither name nor id: %w", kerr.InvalidRequest)
	}
	if rt.Topic == nil || *rt.Topic == "" {
		t, ok := img.TopicByID(uuid.UUID(rt.TopicID))
		if !ok {
			return Record{}, fmt.Errorf("topic id %s: %w", uuid.UUID(rt.TopicID), kerr.UnknownTopicID)
		}
		return s.DeleteTopic(img, t.Name)
	}
	if Internal(*rt.Topic) {
		return Record{}, fmt.Errorf("%q is an internal topic: %w", *rt.Topic, kerr.InvalidRequest)
	}
	return s.DeleteTopic(img, *rt.Topic)
}

// ConfigEntry is one effective topic config.
type ConfigEntry struct {
	Name    string
	Value   string
	Default bool
}

// ConfigEntries lists every accepted config of t with its effective value
// (min.insync.replicas and unclean.leader.election.enable default to the
// controller's settings), sorted by name.
func ConfigEntries(t *Topic, s Settings) []ConfigEntry {
	defaults := DefaultConfigs(s)
	out := make([]ConfigEntry, 0, len(defaults))
	for _, k := range sortedKeys(defaults) {
		v, set := t.Configs[k]
		if !set {
			v = defaults[k]
		}
		out = append(out, ConfigEntry{Name: k, Value: v, Default: !set})
	}
	return out
}
