package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
)

// TestGroupsConfigSessionTimeouts: Config.Groups moves the session timeout
// bounds JoinGroup enforces; the defaults are Kafka's (6 s minimum).
func TestGroupsConfigSessionTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		groups  broker.GroupConfig
		session time.Duration
		want    *kerr.Error
	}{
		{"default refuses 1s", broker.GroupConfig{}, time.Second, kerr.InvalidSessionTimeout},
		{"default takes 6s", broker.GroupConfig{}, 6 * time.Second, kerr.MemberIDRequired},
		{"lowered min takes 1s", broker.GroupConfig{MinSessionTimeout: time.Second}, time.Second, kerr.MemberIDRequired},
		{"lowered max refuses 6s", broker.GroupConfig{MinSessionTimeout: time.Second, MaxSessionTimeout: 2 * time.Second},
			6 * time.Second, kerr.InvalidSessionTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokertest.Start(t, brokertest.Configure(func(c *broker.Config) { c.Groups = tc.groups }))
			got := firstJoin(t, b.Client(t), "g", tc.session)
			assert.Equal(t, tc.want.Code, got, "want %v, got %v", tc.want, kerr.ErrorForCode(got))
		})
	}
}

// TestGroupsConfigMaxMembers: Config.Groups.MaxMembers is group.max.size; a
// member waiting for its id counts, so with a maximum of one the second
// newcomer is turned away.
func TestGroupsConfigMaxMembers(t *testing.T) {
	b := brokertest.Start(t, brokertest.Configure(func(c *broker.Config) { c.Groups.MaxMembers = 1 }))
	cl := b.Client(t)
	assert.Equal(t, kerr.MemberIDRequired.Code, firstJoin(t, cl, "g", 10*time.Second))
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, firstJoin(t, cl, "g", 10*time.Second))
	assert.Equal(t, kerr.MemberIDRequired.Code, firstJoin(t, cl, "other", 10*time.Second), "another group is not affected")
}

// firstJoin sends a newcomer's JoinGroup (v5, no member id) and returns the
// error code.
func firstJoin(t *testing.T, cl *kgo.Client, group string, session time.Duration) int16 {
	t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group, req.ProtocolType = group, "consumer"
	req.SessionTimeoutMillis = int32(session.Milliseconds())
	req.RebalanceTimeoutMillis = 10000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	return resp.ErrorCode
}

// TestGroupsConfigRefusesInvertedBounds: a minimum session timeout above
// the maximum is a configuration error, not a coordinator that refuses
// every member.
func TestGroupsConfigRefusesInvertedBounds(t *testing.T) {
	_, err := broker.New(broker.Config{
		Dir: t.TempDir(), Engine: "memory",
		Groups: broker.GroupConfig{MinSessionTimeout: time.Minute, MaxSessionTimeout: time.Second},
	})
	require.ErrorContains(t, err, "session timeout")
}
