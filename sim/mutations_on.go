//go:build mutations

package sim

import (
	"slices"

	"github.com/minikafka/minikafka/replication"
)

// With the mutations tag, Options.Mutation switches one protection off:
// a replication rule through its test-only hook (the partitions'
// Replication.ConfigureLeader and ConfigureFollower seams hand it every
// state machine's configuration), or a setting of the product (unclean
// election on, ELR off), so that the checkers can be shown to catch what
// it protects against.

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

// Mutations are the names this build can switch off.
func Mutations() []string {
	return append(slices.Clone(replication.MutationNames), MutationUnclean, MutationNoELR)
}
