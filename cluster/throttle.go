package cluster

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Replication throttles (KIP-73), the configs kafka-reassign-partitions
// --throttle sets: a rate in bytes per second on a broker, and per topic
// the replicas it applies to. A leader throttles what it serves to a
// listed replica, a follower what it fetches for a listed partition,
// and both only while that replica is out of the ISR: a throttle slows a
// reassignment's new replica or a restarted follower catching up, never
// the replicas that acknowledgements wait for.
const (
	ConfigLeaderThrottledRate       = "leader.replication.throttled.rate"
	ConfigFollowerThrottledRate     = "follower.replication.throttled.rate"
	ConfigLeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	ConfigFollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// Unthrottled is the rate of a broker that sets none (Kafka's default,
// Long.MAX_VALUE).
const Unthrottled = math.MaxInt64

// throttleRates are the broker configs that may be set per broker as well
// as cluster-wide: they only pace copying, so two leaders of one topic
// with different rates still apply the same rules.
var throttleRates = map[string]configCheck{
	ConfigLeaderThrottledRate:   intRange(0, math.MaxInt64),
	ConfigFollowerThrottledRate: intRange(0, math.MaxInt64),
}

// throttledReplicas checks a topic's list of throttled replicas: "" (none),
// "*" (all), or "partition:broker" entries separated by commas.
func throttledReplicas(v string) error {
	if v == "" || v == "*" {
		return nil
	}
	for _, e := range splitList(v) {
		p, b, ok := strings.Cut(e, ":")
		if !ok {
			return fmt.Errorf("%q is not partition:broker", e)
		}
		if _, err := strconv.ParseUint(p, 10, 31); err != nil {
			return fmt.Errorf("%q: partition %q is not a partition number", e, p)
		}
		if _, err := strconv.ParseUint(b, 10, 31); err != nil {
			return fmt.Errorf("%q: broker %q is not a broker id", e, b)
		}
	}
	return nil
}

// ThrottledReplica reports whether t's list under key (one of the
// throttled-replicas configs) names the replica of partition on broker.
func (t *Topic) ThrottledReplica(key string, partition, broker int32) bool {
	v := t.Config(key, "")
	if v == "*" {
		return true
	}
	want := strconv.Itoa(int(partition)) + ":" + strconv.Itoa(int(broker))
	return slices.Contains(splitList(v), want)
}

// ReplicationThrottle is broker's rate under key (one of the throttled-rate
// configs) in bytes per second: its own setting, else the cluster-wide one,
// else Unthrottled.
func (m *Metadata) ReplicationThrottle(broker int32, key string) int64 {
	v, ok := m.brokerConfigs[broker][key]
	if !ok {
		v, ok = m.clusterConfigs[key]
	}
	if !ok {
		return Unthrottled
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return Unthrottled // checked on apply; never here
	}
	return n
}

// BrokerConfigs are the dynamic configs set on broker id alone, by name.
// Never modify the map.
func (m *Metadata) BrokerConfigs(id int32) map[string]string { return m.brokerConfigs[id] }

// brokerResource is the broker id a broker resource names: "" is the
// cluster-wide defaults (ok, -1).
func brokerResource(name string) (int32, bool) {
	if name == "" {
		return -1, true
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || id < 0 {
		return 0, false
	}
	return int32(id), true
}
