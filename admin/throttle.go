// Package admin holds operations of a running cluster that take several
// admin requests, for every client of this repository (cmd/cli, the
// benchmarks) to share.
package admin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// A reassignment's replication throttle, as kafka-reassign-partitions
// --throttle sets it: the rate on both sides of every broker the moves
// involve, the replicas the partitions have now listed on the leader side
// (any of them may lead during the move) and the replicas they gain on the
// follower side. Only out-of-sync replicas are ever throttled, so the
// producers' acknowledgements do not wait for it.

// SetThrottle throttles the moves of topic's partitions onto their
// targets (moves: partition to its new replicas) at rate bytes per second.
func SetThrottle(ctx context.Context, adm *kadm.Client, topic string, moves map[int32][]int32, rate int64) error {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return fmt.Errorf("throttle %s: %w", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return fmt.Errorf("throttle %s: no such topic (%v)", topic, td.Err)
	}
	var leaders, followers []string
	var brokers []int32
	for _, p := range slices.Sorted(maps.Keys(moves)) {
		target := moves[p]
		pd, ok := td.Partitions[p]
		if !ok {
			return fmt.Errorf("throttle %s: no partition %d", topic, p)
		}
		cur := pd.Replicas
		for _, r := range cur {
			leaders = append(leaders, fmt.Sprintf("%d:%d", p, r))
		}
		for _, r := range target {
			if !slices.Contains(cur, r) {
				followers = append(followers, fmt.Sprintf("%d:%d", p, r))
			}
		}
		brokers = append(brokers, cur...)
		brokers = append(brokers, target...)
	}
	slices.Sort(brokers)
	brokers = slices.Compact(brokers)
	v := strconv.FormatInt(rate, 10)
	if err := alterBrokers(ctx, adm, brokers, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: cluster.ConfigLeaderThrottledRate, Value: &v},
		{Op: kadm.SetConfig, Name: cluster.ConfigFollowerThrottledRate, Value: &v},
	}); err != nil {
		return err
	}
	return alterTopic(ctx, adm, topic, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: cluster.ConfigLeaderThrottledReplicas, Value: kmsg.StringPtr(strings.Join(leaders, ","))},
		{Op: kadm.SetConfig, Name: cluster.ConfigFollowerThrottledReplicas, Value: kmsg.StringPtr(strings.Join(followers, ","))},
	})
}

// RemoveThrottle takes the throttle off topic and off every broker.
func RemoveThrottle(ctx context.Context, adm *kadm.Client, topic string) error {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("unthrottle: %w", err)
	}
	if err := alterBrokers(ctx, adm, md.Brokers.NodeIDs(), []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: cluster.ConfigLeaderThrottledRate},
		{Op: kadm.DeleteConfig, Name: cluster.ConfigFollowerThrottledRate},
	}); err != nil {
		return err
	}
	return alterTopic(ctx, adm, topic, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: cluster.ConfigLeaderThrottledReplicas},
		{Op: kadm.DeleteConfig, Name: cluster.ConfigFollowerThrottledReplicas},
	})
}

func alterBrokers(ctx context.Context, adm *kadm.Client, brokers []int32, cs []kadm.AlterConfig) error {
	rs, err := adm.AlterBrokerConfigs(ctx, cs, brokers...)
	if err != nil {
		return fmt.Errorf("throttle rates of brokers %v: %w", brokers, err)
	}
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("throttle rates of broker %s: %w: %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}

func alterTopic(ctx context.Context, adm *kadm.Client, topic string, cs []kadm.AlterConfig) error {
	rs, err := adm.AlterTopicConfigs(ctx, cs, topic)
	if err == nil {
		_, err = rs.On(topic, nil)
	}
	if err == nil && len(rs) > 0 && rs[0].Err != nil {
		err = fmt.Errorf("%w: %s", rs[0].Err, rs[0].ErrMessage)
	}
	if err != nil {
		return fmt.Errorf("throttled replicas of %s: %w", topic, err)
	}
	return nil
}
