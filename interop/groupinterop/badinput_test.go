package groupinterop

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// TestBadGroupRequestsOverTheWire sends malformed group requests through a
// real connection: each gets the error code clients expect, and a group
// consumer running alongside keeps reading.
func TestBadGroupRequestsOverTheWire(t *testing.T) {
	s := brokerTarget("memory").Start(t, 1)
	createTopic(t, s.Addr, "t", partitions)
	out := make(chan rec, 10*records)
	franzClient.start(t, s.Addr, "healthy", "t", longSession, out)
	waitAssigned(t, s.Addr, "healthy", "t", 1, partitions)

	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx := interoptest.Context(t)
	huge := strings.Repeat("g", 100<<10)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = huge
	fr, err := fc.RequestWith(ctx, cl)
	require.NoError(t, err)
	assert.Equal(t, kerr.InvalidGroupID.Code, fr.ErrorCode, "FindCoordinator, 100 KiB group id")

	join := func(groupID string, meta []byte, protocol string) int16 {
		t.Helper()
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = groupID, 10000, 10000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = protocol, meta
		r.Protocols = append(r.Protocols, p)
		resp, err := r.RequestWith(ctx, cl)
		if ke := (*kerr.Error)(nil); errors.As(err, &ke) {
			return ke.Code // franz-go failed finding the coordinator: FindCoordinator's answer
		}
		require.NoError(t, err)
		return resp.ErrorCode
	}
	assert.Equal(t, kerr.InvalidGroupID.Code, join(huge, nil, "range"), "JoinGroup, 100 KiB group id")
	assert.Equal(t, kerr.InvalidRequest.Code, join("other", make([]byte, group.DefaultMaxMetadataBytes+1), "range"), "oversized metadata")
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, join("healthy", nil, "no-such-assignor"), "no protocol in common")

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "healthy", "impostor", 1
	hr, err := hb.RequestWith(ctx, cl)
	require.NoError(t, err)
	assert.Equal(t, kerr.UnknownMemberID.Code, hr.ErrorCode, "unknown member")

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "self-managed", -1
	for _, topic := range []string{"t", "missing"} {
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = topic
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = partitions, 1 // one past the last partition of t
		ct.Partitions = append(ct.Partitions, cp)
		oc.Topics = append(oc.Topics, ct)
	}
	or, err := oc.RequestWith(ctx, cl)
	require.NoError(t, err)
	for _, rt := range or.Topics {
		assert.Equal(t, kerr.UnknownTopicOrPartition.Code, rt.Partitions[0].ErrorCode, "commit to %s[%d]", rt.Topic, partitions)
	}

	collect(t, out, produce(t, s.Addr, "t", "still-served", 60))
	groups, err := admin(t, s.Addr).ListGroups(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"healthy"}, groups.Groups(), "no group left behind by the bad requests")
}
