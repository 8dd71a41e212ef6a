package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/cluster"
)

// TestReassign, on four brokers with a topic on three: reassign -wait
// moves the partition off its preferred replica and onto the fourth
// broker and says when it is done; a move onto a stopped broker is listed
// and cancelled; a cancel of nothing and bad usage fail.
func TestReassign(t *testing.T) {
	c := brokertest.StartClusterOf(t, 4, 3, brokertest.Engine("segment"))
	addr := strings.Join(c.Seeds(), ",")
	ok(t, addr, "", "topics", "create", "rs", "-partitions", "1", "-replication-factor", "3")
	ok(t, addr, "", "produce", "rs", "a", "b", "c")
	before := partition0(t, c, "rs").Replicas
	var target []int32
	for id := int32(1); id <= 4; id++ {
		if id != before[0] {
			target = append(target, id)
		}
	}
	spec := idList(target)

	out := lines(ok(t, addr, "", "reassign", "-topic", "rs", "-replicas", spec, "-wait"))
	require.Len(t, out, 3, "header, one partition, done")
	assert.Equal(t, []string{"PARTITION", "RESULT"}, strings.Fields(out[0]))
	assert.Equal(t, []string{"0", "moving", "to", spec}, strings.Fields(out[1]))
	assert.Equal(t, "done", out[2])
	require.Eventually(t, func() bool {
		p := partition0(t, c, "rs")
		return slices.Equal(p.Replicas, target) && !p.Reassigning()
	}, 30*time.Second, 10*time.Millisecond, "on %v", target)
	out = lines(ok(t, addr, "", "reassign", "-list"))
	assert.Equal(t, []string{"TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING"}, strings.Fields(out[0]))
	assert.Len(t, out, 1, "nothing moving")

	// Broker before[0] is out of the replicas now: stopped, a move back
	// onto it cannot finish.
	gone := before[0]
	c.Node(gone).Stop(t)
	back := append([]int32{gone}, target[1:]...)
	out = lines(ok(t, addr, "", "reassign", "-topic", "rs", "-partition", "0", "-replicas", idList(back)))
	assert.Contains(t, out[1], "moving to "+idList(back))
	out = lines(ok(t, addr, "", "reassign", "-list", "-topic", "rs"))
	require.Len(t, out, 2)
	assert.Equal(t, []string{"rs", "0", idList(append(slices.Clone(back), target[0])), idList([]int32{gone}), idList(target[:1])},
		strings.Fields(out[1]))
	out = lines(ok(t, addr, "", "reassign", "-topic", "rs", "-cancel"))
	assert.Equal(t, []string{"0", "cancelled"}, strings.Fields(out[1]))
	assert.Len(t, lines(ok(t, addr, "", "reassign", "-list")), 1, "nothing moving")

	r := cli(t, addr, "", "reassign", "-topic", "rs", "-cancel")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "NO_REASSIGNMENT_IN_PROGRESS")
	r = cli(t, addr, "", "reassign", "-topic", "rs", "-replicas", "1,1,2")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "INVALID_REPLICA_ASSIGNMENT")
	for _, args := range [][]string{
		{"reassign", "-topic", "rs"},
		{"reassign", "-replicas", "1,2"},
		{"reassign", "-topic", "rs", "-replicas", "1,x"},
		{"reassign", "-topic", "rs", "-replicas", "1,2", "-cancel"},
		{"reassign", "-topic", "rs", "-throttle", "10", "-cancel"},
		{"reassign", "-topic", "rs", "-replicas", "1,2", "-throttle", "-5"},
		{"reassign", "-topic", "rs", "-unthrottle", "-list"},
	} {
		assert.Equal(t, 2, cli(t, addr, "", args...).code, "%q is bad usage", args)
	}
}

// reassign -throttle sets the rates on every broker of the move and the
// throttled replicas on the topic (the current replicas on the leader
// side, the new one on the follower side); at 1 B/s the move stays in
// progress, -unthrottle takes it all off and the move completes; with
// -wait the throttle comes off by itself.
func TestReassignThrottle(t *testing.T) {
	c := brokertest.StartClusterOf(t, 4, 3, brokertest.Engine("segment"))
	addr := strings.Join(c.Seeds(), ",")
	ok(t, addr, "", "topics", "create", "th", "-partitions", "1", "-replication-factor", "3")
	for range 20 {
		ok(t, addr, "", "produce", "th", strings.Repeat("x", 1000), strings.Repeat("y", 1000))
	}
	before := partition0(t, c, "th").Replicas
	var spare int32
	for id := int32(1); id <= 4; id++ {
		if !slices.Contains(before, id) {
			spare = id
		}
	}
	target := append([]int32{spare}, before[1:]...)
	out := ok(t, addr, "", "reassign", "-topic", "th", "-replicas", idList(target), "-throttle", "1")
	assert.Contains(t, out, "throttled at 1 bytes/s")
	img := c.Node(before[1]).Server.Metadata()
	tp, _ := img.Topic("th")
	var leaders []string
	for _, r := range before {
		leaders = append(leaders, fmt.Sprintf("0:%d", r))
	}
	assert.Equal(t, strings.Join(leaders, ","), tp.Configs[cluster.ConfigLeaderThrottledReplicas])
	assert.Equal(t, fmt.Sprintf("0:%d", spare), tp.Configs[cluster.ConfigFollowerThrottledReplicas])
	for id := int32(1); id <= 4; id++ {
		assert.Equal(t, int64(1), img.ReplicationThrottle(id, cluster.ConfigFollowerThrottledRate), "broker %d", id)
		assert.Equal(t, int64(1), img.ReplicationThrottle(id, cluster.ConfigLeaderThrottledRate), "broker %d", id)
	}
	time.Sleep(time.Second)
	assert.Len(t, lines(ok(t, addr, "", "reassign", "-list", "-topic", "th")), 2, "still moving at 1 B/s")

	assert.Equal(t, "unthrottled", strings.TrimSpace(ok(t, addr, "", "reassign", "-topic", "th", "-unthrottle")))
	require.Eventually(t, func() bool {
		p := partition0(t, c, "th")
		return slices.Equal(p.Replicas, target) && !p.Reassigning()
	}, 30*time.Second, 10*time.Millisecond, "the move completes once unthrottled")
	img = c.Node(spare).Server.Metadata()
	tp, _ = img.Topic("th")
	assert.NotContains(t, tp.Configs, cluster.ConfigLeaderThrottledReplicas)
	assert.NotContains(t, tp.Configs, cluster.ConfigFollowerThrottledReplicas)
	for id := int32(1); id <= 4; id++ {
		assert.Nil(t, img.BrokerConfigs(id), "broker %d", id)
	}

	out = ok(t, addr, "", "reassign", "-topic", "th", "-replicas", idList(before), "-throttle", "100000000", "-wait")
	assert.Equal(t, []string{"throttled at 100000000 bytes/s", "PARTITION", "0", "done", "unthrottled"},
		firstFields(lines(out)))
	require.Nil(t, c.Node(spare).Server.Metadata().BrokerConfigs(before[0]))
}

// firstFields is the first word of each line, the whole line when it
// starts with "throttled".
func firstFields(ls []string) []string {
	var out []string
	for _, l := range ls {
		if strings.HasPrefix(l, "throttled") {
			out = append(out, l)
		} else if f := strings.Fields(l); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}
