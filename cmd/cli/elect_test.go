package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/cluster"
)

// partition0 is partition 0 of topic in broker 1's metadata.
func partition0(t *testing.T, c *brokertest.Cluster, topic string) cluster.Partition {
	t.Helper()
	tp, ok := c.Node(1).Server.Metadata().Topic(topic)
	require.True(t, ok)
	return tp.Partitions[0]
}

// TestElectLeadersAndLogDirs, on a three-broker cluster without automatic
// balancing: elect-leaders moves a leadership a restart took away back to
// the preferred replica and says "not needed" once it leads; log-dirs
// shows the partition's replica on every broker.
func TestElectLeadersAndLogDirs(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"),
		brokertest.Configure(func(c *broker.Config) { c.Cluster.LeaderRebalanceInterval = -1 }))
	addr := strings.Join(c.Seeds(), ",")
	ok(t, addr, "", "topics", "create", "el", "-partitions", "1", "-replication-factor", "3")
	ok(t, addr, "", "produce", "el", "a", "b", "c")
	pref := partition0(t, c, "el").Replicas[0]
	require.Equal(t, pref, partition0(t, c, "el").Leader)

	c.Node(pref).Stop(t)
	c.Node(pref).Start(t)
	require.Eventually(t, func() bool { return len(partition0(t, c, "el").ISR) == 3 }, 30*time.Second, 10*time.Millisecond)
	require.NotEqual(t, pref, partition0(t, c, "el").Leader, "the restart moved leadership away")

	out := lines(ok(t, addr, "", "elect-leaders", "el"))
	require.Len(t, out, 2, "header and one partition")
	assert.Equal(t, []string{"PARTITION", "RESULT"}, strings.Fields(out[0]))
	assert.Equal(t, []string{"0", "elected"}, strings.Fields(out[1]))
	require.Eventually(t, func() bool { return partition0(t, c, "el").Leader == pref }, 30*time.Second, 10*time.Millisecond)

	out = lines(ok(t, addr, "", "elect-leaders", "-partition", "0", "el"))
	assert.Contains(t, out[1], "not needed")
	assert.Contains(t, out[1], "already leads")
	out = lines(ok(t, addr, "", "elect-leaders", "-unclean", "el"))
	assert.Contains(t, out[1], "not needed", "unclean: a leader exists")

	r := cli(t, addr, "", "elect-leaders", "el", "-partition", "7")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "UNKNOWN_TOPIC_OR_PARTITION")
	r = cli(t, addr, "", "elect-leaders")
	assert.Equal(t, 2, r.code, "TOPIC is required")

	require.Eventually(t, func() bool {
		rows := lines(ok(t, addr, "", "log-dirs", "el"))
		if len(rows) != 4 {
			return false
		}
		for i, row := range rows[1:] {
			f := strings.Fields(row)
			if len(f) != 6 || f[0] != string(rune('1'+i)) || f[2] != "el" || f[3] != "0" || f[4] == "0" || f[5] != "0" {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "a replica on each broker, not empty, not behind")
}

// TestLogDirs: log-dirs lists each replica with its size, TOPIC arguments
// keep only those topics, and an unknown topic fails.
func TestLogDirs(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "ld", "-partitions", "2")
		ok(t, addr, "", "topics", "create", "other", "-partitions", "1")
		ok(t, addr, "", "produce", "ld", "-partition", "1", "some", "records")

		out := lines(ok(t, addr, "", "log-dirs", "ld"))
		require.Len(t, out, 3, "header and two partitions")
		assert.Equal(t, []string{"BROKER", "DIR", "TOPIC", "PARTITION", "SIZE", "LAG"}, strings.Fields(out[0]))
		p0, p1 := strings.Fields(out[1]), strings.Fields(out[2])
		require.Len(t, p0, 6)
		require.Len(t, p1, 6)
		assert.Equal(t, []string{"ld", "0", "0", "0"}, p0[2:], "empty, not behind")
		assert.Equal(t, []string{"ld", "1"}, p1[2:4])
		assert.NotEqual(t, "0", p1[4], "partition 1 has records")

		all := ok(t, addr, "", "log-dirs")
		assert.Contains(t, all, "other")
		r := cli(t, addr, "", "log-dirs", "missing")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "UNKNOWN_TOPIC_OR_PARTITION")
	})
}
