package cluster

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The throttle rates are kept per broker and cluster-wide, a broker's own
// over the cluster's; the throttled replicas are topic lists; all survive
// a snapshot.
func TestReplicationThrottleConfigs(t *testing.T) {
	h := newConfigHarness(t)
	br := kmsg.ConfigResourceTypeBroker
	img := h.store.Image()
	require.Equal(t, int64(Unthrottled), img.ReplicationThrottle(1, ConfigLeaderThrottledRate))

	code, msg := h.incremental(br, "2", false, incOp{ConfigLeaderThrottledRate, set, str("1000")}, incOp{ConfigFollowerThrottledRate, set, str("2000")})
	require.Zero(t, code, msg)
	code, msg = h.incremental(br, "", false, incOp{ConfigFollowerThrottledRate, set, str("500")})
	require.Zero(t, code, msg)
	img = h.store.Image()
	require.Equal(t, int64(1000), img.ReplicationThrottle(2, ConfigLeaderThrottledRate))
	require.Equal(t, int64(2000), img.ReplicationThrottle(2, ConfigFollowerThrottledRate), "the broker's own rate wins")
	require.Equal(t, int64(500), img.ReplicationThrottle(1, ConfigFollowerThrottledRate), "else the cluster-wide one")
	require.Equal(t, int64(Unthrottled), img.ReplicationThrottle(1, ConfigLeaderThrottledRate))
	require.Equal(t, map[string]string{ConfigLeaderThrottledRate: "1000", ConfigFollowerThrottledRate: "2000"}, img.BrokerConfigs(2))

	for _, c := range []struct {
		name, resource string
		op             incOp
		code           int16
		msg            string
	}{
		{"negative rate", "2", incOp{ConfigLeaderThrottledRate, set, str("-1")}, kerr.InvalidConfig.Code, "outside"},
		{"not a number", "", incOp{ConfigLeaderThrottledRate, set, str("fast")}, kerr.InvalidConfig.Code, "not an integer"},
		{"a rate is no list", "2", incOp{ConfigLeaderThrottledRate, appendOp, str("1")}, kerr.InvalidRequest.Code, "not a list"},
		{"a topic default is not per broker", "2", incOp{ConfigMinInsyncReplicas, set, str("2")}, kerr.InvalidRequest.Code, "cluster-wide only"},
		{"not a broker id", "b2", incOp{ConfigLeaderThrottledRate, set, str("1")}, kerr.InvalidRequest.Code, "nor a broker id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, msg := h.incremental(br, c.resource, false, c.op)
			require.Equal(t, c.code, code, msg)
			require.Contains(t, msg, c.msg)
		})
	}

	code, msg = h.incremental(topicRes, "t", false, incOp{ConfigLeaderThrottledReplicas, appendOp, str("0:1,0:2")},
		incOp{ConfigFollowerThrottledReplicas, set, str("*")})
	require.Zero(t, code, msg)
	code, msg = h.incremental(topicRes, "t", false, incOp{ConfigLeaderThrottledReplicas, appendOp, str("0:3,0:1")})
	require.Zero(t, code, msg)
	tp, _ := h.store.Image().Topic("t")
	require.Equal(t, "0:1,0:2,0:3", tp.Configs[ConfigLeaderThrottledReplicas])
	for b := int32(1); b <= 4; b++ {
		require.Equal(t, b <= 3, tp.ThrottledReplica(ConfigLeaderThrottledReplicas, 0, b), "broker %d", b)
		require.True(t, tp.ThrottledReplica(ConfigFollowerThrottledReplicas, 0, b))
	}
	require.False(t, tp.ThrottledReplica(ConfigLeaderThrottledReplicas, 1, 1))
	for _, bad := range []string{"0", "0:x", "x:1", "0:1:2", "-1:1"} {
		code, msg = h.incremental(topicRes, "t", false, incOp{ConfigLeaderThrottledReplicas, set, str(bad)})
		require.Equal(t, kerr.InvalidConfig.Code, code, "%q: %s", bad, msg)
	}

	img = h.store.Image()
	snap, err := img.MarshalSnapshot()
	require.NoError(t, err)
	m, err := UnmarshalSnapshot(snap)
	require.NoError(t, err)
	require.Equal(t, img.BrokerConfigs(2), m.BrokerConfigs(2))
	require.Equal(t, int64(500), m.ReplicationThrottle(3, ConfigFollowerThrottledRate))

	code, msg = h.incremental(br, "2", false, incOp{ConfigLeaderThrottledRate, del, nil}, incOp{ConfigFollowerThrottledRate, del, nil})
	require.Zero(t, code, msg)
	img = h.store.Image()
	require.Nil(t, img.BrokerConfigs(2))
	require.Equal(t, int64(500), img.ReplicationThrottle(2, ConfigFollowerThrottledRate))
	require.Equal(t, strconv.FormatInt(Unthrottled, 10), strconv.FormatInt(img.ReplicationThrottle(2, ConfigLeaderThrottledRate), 10))
}
