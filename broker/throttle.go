package broker

import (
	"slices"
	"sync/atomic"

	"github.com/minikafka/minikafka/broker/node"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
)

// Replication throttles (KIP-73, cluster/throttle.go): one leader quota
// for everything this broker serves to throttled followers, one follower
// quota for everything its fetchers copy for throttled partitions, their
// limits this broker's rates in the metadata, applied at every
// reconciliation. A copy is throttled only while the replica it feeds is
// out of the ISR (Kafka's rule): a reassignment's new replica or a
// follower catching up after a restart, never one that acknowledgements
// wait for.

type throttles struct {
	leader, follower *node.Quota
	// followed are the partitions this broker follows whose fetch is
	// throttled now (read by the fetchers, replaced at each reconcile).
	followed atomic.Pointer[map[partition.Key]bool]
}

func newThrottles() *throttles {
	t := &throttles{leader: node.NewQuota(), follower: node.NewQuota()}
	t.followed.Store(&map[partition.Key]bool{})
	return t
}

// followerThrottle is the throttle this broker's fetchers apply.
func (t *throttles) followerThrottle() *node.FollowerThrottle {
	return &node.FollowerThrottle{Quota: t.follower, Throttled: func(k partition.Key) bool { return (*t.followed.Load())[k] }}
}

// apply takes the rates and the throttled partitions of img for broker self.
func (t *throttles) apply(img *cluster.Metadata, self int32) {
	t.leader.SetLimit(img.ReplicationThrottle(self, cluster.ConfigLeaderThrottledRate))
	rate := img.ReplicationThrottle(self, cluster.ConfigFollowerThrottledRate)
	t.follower.SetLimit(rate)
	followed := map[partition.Key]bool{}
	if rate != cluster.Unthrottled {
		for _, tp := range img.Topics() {
			if tp.Config(cluster.ConfigFollowerThrottledReplicas, "") == "" {
				continue
			}
			for i, p := range tp.Partitions {
				if throttled(tp, cluster.ConfigFollowerThrottledReplicas, int32(i), self, self, p) {
					followed[partition.Key{TopicID: tp.ID, Index: int32(i)}] = true
				}
			}
		}
	}
	t.followed.Store(&followed)
}

// leaderQuota is the quota of what this broker, leading topic's partition
// index, serves follower replica: nil when that copy is not throttled.
func (t *throttles) leaderQuota(img *cluster.Metadata, topic string, index, self, replica int32) *node.Quota {
	if !t.leader.Limited() {
		return nil
	}
	tp, ok := img.Topic(topic)
	if !ok || index < 0 || int(index) >= len(tp.Partitions) {
		return nil
	}
	if !throttled(tp, cluster.ConfigLeaderThrottledReplicas, index, self, replica, tp.Partitions[index]) {
		return nil
	}
	return t.leader
}

// throttled reports whether tp's list under key names partition index on
// broker listed, and replica, whose copy it is, is out of the ISR.
func throttled(tp *cluster.Topic, key string, index, listed, replica int32, p cluster.Partition) bool {
	return !slices.Contains(p.ISR, replica) && tp.ThrottledReplica(key, index, listed)
}
