package cluster

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configHarness is a core with three live brokers and a topic "t" of
// replication factor 3, each operation committed to a Store.
type configHarness struct {
	t     *testing.T
	core  *ControllerCore
	store *Store
	next  uint64
	now   time.Time
	q     Quorum
}

func newConfigHarness(t *testing.T) *configHarness {
	h := &configHarness{t: t, core: NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1}),
		store: NewStore(), now: time.Unix(1000, 0), q: Quorum{Active: true, Term: 1}}
	for id := int32(1); id <= 3; id++ {
		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.BrokerID, reg.ClusterID, reg.IncarnationID = id, "c1", uuid.New()
		require.Zero(t, h.do(reg).(*kmsg.BrokerRegistrationResponse).ErrorCode)
	}
	for id := int32(1); id <= 3; id++ {
		b, _ := h.store.Image().Broker(id)
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, b.Epoch, int64(h.store.Image().Offset())
		require.False(t, h.do(hb).(*kmsg.BrokerHeartbeatResponse).IsFenced)
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", 1, 3
	ct.Topics = append(ct.Topics, rt)
	require.Zero(t, h.do(ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	return h
}

func (h *configHarness) do(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	op, err := h.core.Handle(h.q, h.store.Image(), h.now, req)
	require.NoError(h.t, err)
	for !op.Done() {
		payload, err := EncodeBatch(op.Proposal())
		require.NoError(h.t, err)
		h.next++
		require.NoError(h.t, h.store.Apply(h.next, payload))
		op.Applied(Outcome{Image: h.store.Image(), Offset: h.next, Refused: h.store.Refusal(h.next), Now: h.now})
	}
	return op.Response()
}

type incOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

// incremental sends one IncrementalAlterConfigs of one resource and returns
// its error code and message.
func (h *configHarness) incremental(typ kmsg.ConfigResourceType, name string, validateOnly bool, ops ...incOp) (int16, string) {
	h.t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = o.name, o.op, o.value
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	sr := h.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	msg := ""
	if sr.ErrorMessage != nil {
		msg = *sr.ErrorMessage
	}
	return sr.ErrorCode, msg
}

func (h *configHarness) topicConfigs() map[string]string {
	t, ok := h.store.Image().Topic("t")
	require.True(h.t, ok)
	return t.Configs
}

const (
	set      = kmsg.IncrementalAlterConfigOpSet
	del      = kmsg.IncrementalAlterConfigOpDelete
	appendOp = kmsg.IncrementalAlterConfigOpAppend
	subtract = kmsg.IncrementalAlterConfigOpSubtract
	topicRes = kmsg.ConfigResourceTypeTopic
)

// Each case runs on the image the cases before it left.
func TestIncrementalAlterTopicConfigs(t *testing.T) {
	h := newConfigHarness(t)
	for _, c := range []struct {
		name     string
		resource string
		validate bool
		ops      []incOp
		code     int16
		msg      string // a part of the error message
		want     map[string]string
	}{
		{name: "set two", resource: "t", ops: []incOp{{"retention.ms", set, str("1000")}, {"min.insync.replicas", set, str("2")}},
			want: map[string]string{"retention.ms": "1000", "min.insync.replicas": "2"}},
		{name: "validate only changes nothing", resource: "t", validate: true, ops: []incOp{{"retention.ms", set, str("5")}},
			want: map[string]string{"retention.ms": "1000", "min.insync.replicas": "2"}},
		{name: "validate only still checks", resource: "t", validate: true, ops: []incOp{{"retention.ms", set, str("x")}},
			code: kerr.InvalidConfig.Code, msg: `"x" is not an integer`, want: map[string]string{"retention.ms": "1000", "min.insync.replicas": "2"}},
		{name: "delete", resource: "t", ops: []incOp{{"retention.ms", del, nil}},
			want: map[string]string{"min.insync.replicas": "2"}},
		{name: "unknown key", resource: "t", ops: []incOp{{"flush.ms", set, str("1")}},
			code: kerr.InvalidConfig.Code, msg: `config "flush.ms" is not supported`, want: map[string]string{"min.insync.replicas": "2"}},
		{name: "one bad op fails the resource whole", resource: "t", ops: []incOp{{"retention.ms", set, str("7")}, {"segment.bytes", set, str("1")}},
			code: kerr.InvalidConfig.Code, msg: "segment.bytes: 1 is outside [14,", want: map[string]string{"min.insync.replicas": "2"}},
		{name: "min.insync.replicas above the replication factor", resource: "t", ops: []incOp{{"min.insync.replicas", set, str("4")}},
			code: kerr.InvalidConfig.Code, msg: "above the replication factor 3", want: map[string]string{"min.insync.replicas": "2"}},
		{name: "append to a list that has its default", resource: "t", ops: []incOp{{"cleanup.policy", appendOp, str("delete")}},
			want: map[string]string{"min.insync.replicas": "2", "cleanup.policy": "delete"}},
		{name: "append what is not supported", resource: "t", ops: []incOp{{"cleanup.policy", appendOp, str("compact")}},
			code: kerr.InvalidConfig.Code, msg: `"delete,compact" is not supported`, want: map[string]string{"min.insync.replicas": "2", "cleanup.policy": "delete"}},
		{name: "subtract leaves an empty list", resource: "t", ops: []incOp{{"cleanup.policy", subtract, str("delete")}},
			code: kerr.InvalidConfig.Code, msg: "cleanup.policy", want: map[string]string{"min.insync.replicas": "2", "cleanup.policy": "delete"}},
		{name: "append to a config that is no list", resource: "t", ops: []incOp{{"retention.ms", appendOp, str("1")}},
			code: kerr.InvalidRequest.Code, msg: "not a list", want: map[string]string{"min.insync.replicas": "2", "cleanup.policy": "delete"}},
		{name: "null value", resource: "t", ops: []incOp{{"retention.ms", set, nil}},
			code: kerr.InvalidRequest.Code, msg: "null value", want: map[string]string{"min.insync.replicas": "2", "cleanup.policy": "delete"}},
		{name: "a key twice", resource: "t", ops: []incOp{{"retention.ms", set, str("1")}, {"retention.ms", del, nil}},
			code: kerr.InvalidRequest.Code, msg: "more than once", want: map[string]string{"min.insync.replicas": "2", "cleanup.policy": "delete"}},
		{name: "unknown operation", resource: "t", ops: []incOp{{"retention.ms", 9, str("1")}},
			code: kerr.InvalidRequest.Code, msg: "unknown operation", want: map[string]string{"min.insync.replicas": "2", "cleanup.policy": "delete"}},
		{name: "unknown topic", resource: "nope", ops: []incOp{{"retention.ms", set, str("1")}},
			code: kerr.UnknownTopicOrPartition.Code, want: map[string]string{"min.insync.replicas": "2", "cleanup.policy": "delete"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.t = t
			code, msg := h.incremental(topicRes, c.resource, c.validate, c.ops...)
			require.Equal(t, c.code, code, "error code (message %q)", msg)
			require.Contains(t, msg, c.msg)
			require.Equal(t, c.want, h.topicConfigs())
		})
	}
}

// AlterConfigs replaces the whole set; a resource named twice is refused
// at each mention; the result survives a snapshot.
func TestAlterConfigsReplaces(t *testing.T) {
	h := newConfigHarness(t)
	code, _ := h.incremental(topicRes, "t", false, incOp{"retention.ms", set, str("1000")}, incOp{"max.message.bytes", set, str("2048")})
	require.Zero(t, code)

	req := kmsg.NewPtrAlterConfigsRequest()
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = topicRes, "t"
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "retention.bytes", str("4096")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp := h.do(req).(*kmsg.AlterConfigsResponse)
	require.Zero(t, resp.Resources[0].ErrorCode)
	require.Equal(t, map[string]string{"retention.bytes": "4096"}, h.topicConfigs(), "the set not named is gone")

	req.Resources = append(req.Resources, rr)
	resp = h.do(req).(*kmsg.AlterConfigsResponse)
	require.Len(t, resp.Resources, 2)
	for _, sr := range resp.Resources {
		require.Equal(t, kerr.InvalidRequest.Code, sr.ErrorCode)
	}

	snap, err := h.store.Image().MarshalSnapshot()
	require.NoError(t, err)
	m, err := UnmarshalSnapshot(snap)
	require.NoError(t, err)
	tp, _ := m.Topic("t")
	require.Equal(t, map[string]string{"retention.bytes": "4096"}, tp.Configs)
}

// The cluster-wide broker defaults: min.insync.replicas and
// unclean.leader.election.enable may be set; static configs and a single
// broker's resource are refused.
func TestAlterBrokerConfigs(t *testing.T) {
	h := newConfigHarness(t)
	br := kmsg.ConfigResourceTypeBroker
	code, msg := h.incremental(br, "", false, incOp{"broker.id", set, str("7")}, incOp{"log.dirs", set, str("/x")})
	require.Equal(t, kerr.InvalidRequest.Code, code)
	require.Contains(t, msg, "cannot update these configs dynamically: [broker.id log.dirs]")
	code, msg = h.incremental(br, "2", false, incOp{"min.insync.replicas", set, str("2")})
	require.Equal(t, kerr.InvalidRequest.Code, code)
	require.Contains(t, msg, "cluster-wide only")
	code, _ = h.incremental(br, "", false, incOp{"num.io.threads", set, str("2")})
	require.Equal(t, kerr.InvalidConfig.Code, code)

	code, msg = h.incremental(br, "", false, incOp{"min.insync.replicas", set, str("2")}, incOp{"unclean.leader.election.enable", set, str("true")})
	require.Zero(t, code, msg)
	img := h.store.Image()
	require.Equal(t, map[string]string{"min.insync.replicas": "2", "unclean.leader.election.enable": "true"}, img.ClusterConfigs())
	s := h.core.Settings().Dynamic(img)
	tp, _ := img.Topic("t")
	require.Equal(t, 2, s.MinISR(tp))
	require.True(t, s.Unclean(tp))
	require.Equal(t, "2", DefaultConfigs(s)[ConfigMinInsyncReplicas])

	snap, err := img.MarshalSnapshot()
	require.NoError(t, err)
	m, err := UnmarshalSnapshot(snap)
	require.NoError(t, err)
	require.Equal(t, img.ClusterConfigs(), m.ClusterConfigs())

	code, _ = h.incremental(br, "", false, incOp{"min.insync.replicas", del, nil})
	require.Zero(t, code)
	require.Equal(t, 1, h.core.Settings().Dynamic(h.store.Image()).MinISR(tp))
}

// An unclean election follows the topic's dynamic config: the last ISR
// member fenced, a replica outside the ISR leads only once the topic
// allows it.
func TestUncleanElectionReadsTheTopicsConfig(t *testing.T) {
	h := newConfigHarness(t)
	s := h.core.Settings()
	// Shrink the ISR to the leader alone, then fence the leader.
	img := h.store.Image()
	tp, _ := img.Topic("t")
	p := tp.Partitions[0]
	for _, r := range p.Replicas {
		if r != p.Leader {
			h.apply(s.Fence(h.store.Image(), r))
		}
	}
	h.apply(s.Fence(h.store.Image(), p.Leader))
	tp, _ = h.store.Image().Topic("t")
	require.Equal(t, NoLeader, tp.Partitions[0].Leader)
	for _, r := range p.Replicas {
		if r != p.Leader {
			h.apply(s.Unfence(h.store.Image(), r))
		}
	}
	tp, _ = h.store.Image().Topic("t")
	require.Equal(t, NoLeader, tp.Partitions[0].Leader, "clean elections only")

	code, msg := h.incremental(topicRes, "t", false, incOp{"unclean.leader.election.enable", set, str("true")})
	require.Zero(t, code, msg)
	h.apply(s.Rebalance(h.store.Image()))
	tp, _ = h.store.Image().Topic("t")
	require.NotEqual(t, NoLeader, tp.Partitions[0].Leader, "unclean election once the topic allows it")
	require.NotEqual(t, p.Leader, tp.Partitions[0].Leader)
}

func (h *configHarness) apply(recs []Record) {
	h.t.Helper()
	if len(recs) == 0 {
		return
	}
	payload, err := EncodeBatch(recs)
	require.NoError(h.t, err)
	h.next++
	require.NoError(h.t, h.store.Apply(h.next, payload))
	require.NoError(h.t, h.store.Refusal(h.next))
}

// Apply refuses a config record that no controller would write.
func TestApplyRefusesBadConfigRecords(t *testing.T) {
	h := newConfigHarness(t)
	tp, _ := h.store.Image().Topic("t")
	for name, c := range map[string]ConfigChange{
		"bad value":       {ResourceType: ResourceTopic, ResourceName: "t", TopicID: tp.ID, Name: ConfigRetentionMs, Value: str("x")},
		"unknown key":     {ResourceType: ResourceTopic, ResourceName: "t", TopicID: tp.ID, Name: "flush.ms", Value: str("1")},
		"another topic":   {ResourceType: ResourceTopic, ResourceName: "u", TopicID: tp.ID, Name: ConfigRetentionMs, Value: str("1")},
		"one broker":      {ResourceType: ResourceBroker, ResourceName: "1", Name: ConfigMinInsyncReplicas, Value: str("1")},
		"a static one":    {ResourceType: ResourceBroker, Name: "broker.id", Value: str("1")},
		"a resource type": {ResourceType: 8, Name: "x", Value: str("1")},
	} {
		_, err := h.store.Image().Apply(h.store.Image().Offset()+1, []Record{{Config: &c}})
		require.ErrorIs(t, err, ErrRefused, name)
	}
}

// A controller that is not the active one answers every resource
// NOT_CONTROLLER, so that a broker forwarding the request tries the next.
func TestAlterConfigsNotActive(t *testing.T) {
	h := newConfigHarness(t)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, name := range []string{"t", "u"} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = topicRes, name
		req.Resources = append(req.Resources, rr)
	}
	resp, err := NotActiveResponse(req, h.store.Image(), h.now)
	require.NoError(t, err)
	for _, sr := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		require.Equal(t, kerr.NotController.Code, sr.ErrorCode, sr.ResourceName)
	}
	old := kmsg.NewPtrAlterConfigsRequest()
	old.Resources = append(old.Resources, kmsg.NewAlterConfigsRequestResource())
	resp, err = NotActiveResponse(old, h.store.Image(), h.now)
	require.NoError(t, err)
	require.Equal(t, kerr.NotController.Code, resp.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode)
}
