//go:build mutations

package sim

import (
	"slices"

	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/replication"
)

// With the mutations tag, Options.Mutation switches one protection off: a
// replication rule through the partitions' Replication.ConfigureLeader and
// ConfigureFollower seams, which hand it every state machine's
// configuration, or a controller rule through cluster.Settings.Mutate, so
// that the checkers can be shown to catch what it protects against.

func configureLeader(name string) func(*replication.LeaderConfig) {
	if !slices.Contains(replication.MutationNames, name) {
		return nil
	}
	return func(c *replication.LeaderConfig) { _ = c.Mutate(name) }
}

func configureFollower(name string) func(*replication.FollowerConfig) {
	if !slices.Contains(replication.MutationNames, name) {
		return nil
	}
	return func(c *replication.FollowerConfig) { _ = c.Mutate(name) }
}

// mutatePartitions switches a partition protection off (broker/partition's
// Config.Mutate).
func mutatePartitions(c *partition.Config, name string) {
	if slices.Contains(partition.MutationNames, name) {
		_ = c.Mutate(name)
	}
}

// mutateGroups switches a group coordinator protection off
// (broker/group's Config.Mutate).
func mutateGroups(c *group.Config, name string) {
	if slices.Contains(group.MutationNames, name) {
		_ = c.Mutate(name)
	}
}

func mutateSettings(s *cluster.Settings, name string) {
	if slices.Contains(cluster.MutationNames, name) {
		_ = s.Mutate(name)
	}
}

// Mutations are the names this build can switch off, and the product
// setting that turns a protection off (unclean election).
func Mutations() []string {
	return slices.Concat(replication.MutationNames, cluster.MutationNames, partition.MutationNames, group.MutationNames, []string{MutationUnclean})
}
