//go:build mutations

package sim

import (
	"slices"

	"github.com/minikafka/minikafka/replication"
)

// With the mutations tag, Options.Mutation switches one protection off:
// a replication rule through its test-only hook, or a setting of the
// product (unclean election on, ELR off), so that the checkers can be
// shown to catch what it protects against.

func mutateLeader(c *replication.LeaderConfig, name string) {
	if slices.Contains(replication.MutationNames, name) {
		_ = c.Mutate(name)
	}
}

func mutateFollower(c *replication.FollowerConfig, name string) {
	if slices.Contains(replication.MutationNames, name) {
		_ = c.Mutate(name)
	}
}

// Mutations are the names this build can switch off.
func Mutations() []string {
	return append(slices.Clone(replication.MutationNames), MutationUnclean, MutationNoELR)
}
