package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
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
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version = 5
			req.Group, req.ProtocolType = "g", "consumer"
			req.SessionTimeoutMillis = int32(tc.session.Milliseconds())
			req.RebalanceTimeoutMillis = 10000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			req.Protocols = append(req.Protocols, p)
			resp, err := req.RequestWith(context.Background(), b.Client(t))
			require.NoError(t, err)
			assert.Equal(t, tc.want.Code, resp.ErrorCode, "want %v, got %v", tc.want, kerr.ErrorForCode(resp.ErrorCode))
		})
	}
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
