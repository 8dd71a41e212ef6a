package cluster

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopics decides every topic of the request on one image and commits
// the valid ones as one batch: one round trip to the quorum however many
// topics are created.
func (c *Controller) createTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.ready(ctx)
	img := c.cfg.Store.Image()
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
			fillCreated(&st, &Topic{Name: rt.Topic, Configs: rec.CreateTopic.Configs, Partitions: rec.CreateTopic.Partitions}, c.cfg.Settings)
			st.TopicID = [16]byte{}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if _, err := c.commit(ctx, recs); err != nil {
		for _, i := range created {
			resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = code(err), message(err)
		}
		return resp
	}
	img = c.cfg.Store.Image()
	for _, i := range created {
		st := &resp.Topics[i]
		t, _ := img.Topic(st.Topic)
		fillCreated(st, t, c.cfg.Settings)
		c.log.Info("created topic", "topic", t.Name, "id", t.ID, "partitions", len(t.Partitions), "replication", len(t.Partitions[0].Replicas))
	}
	return resp
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

func (c *Controller) deleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.ready(ctx)
	img := c.cfg.Store.Image()
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
	if _, err := c.commit(ctx, recs); err != nil {
		for _, i := range deleted {
			resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = code(err), message(err)
		}
		return resp
	}
	for _, i := range deleted {
		c.log.Info("deleted topic", "topic", *resp.Topics[i].Topic)
	}
	return resp
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

func (c *Controller) createPartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.ready(ctx)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		terr := err
		if terr == nil && seen[rt.Topic] > 1 {
			terr = fmt.Errorf("topic %q named more than once: %w", rt.Topic, kerr.InvalidRequest)
		}
		if terr == nil {
			var assignment [][]int32
			for _, a := range rt.Assignment {
				assignment = append(assignment, a.Replicas)
			}
			// One topic at a time: each decision sees the last applied.
			var rec Record
			rec, terr = c.cfg.Settings.AddPartitions(c.cfg.Store.Image(), rt.Topic, rt.Count, assignment, c.rnd)
			if terr == nil && !req.ValidateOnly {
				_, terr = c.commit(ctx, []Record{rec})
			}
		}
		st.ErrorCode, st.ErrorMessage = code(terr), message(terr)
		resp.Topics = append(resp.Topics, st)
	}
	return resp
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
