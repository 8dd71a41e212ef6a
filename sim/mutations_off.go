//go:build !mutations

package sim

import "github.com/minikafka/minikafka/replication"

// Without the mutations build tag no protection can be switched off: a
// run that names a mutation is refused (see Mutations).

func configureLeader(string) func(*replication.LeaderConfig)     { return nil }
func configureFollower(string) func(*replication.FollowerConfig) { return nil }

// Mutations are the names this build can switch off: none.
func Mutations() []string { return nil }
