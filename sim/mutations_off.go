//go:build !mutations

package sim

import (
	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/replication"
)

// Without the mutations build tag no protection can be switched off but
// by a product setting (unclean election): a run that names another
// mutation is refused (see Mutations).

func configureLeader(string) func(*replication.LeaderConfig)     { return nil }
func configureFollower(string) func(*replication.FollowerConfig) { return nil }
func mutateSettings(*cluster.Settings, string)                   {}
func mutatePartitions(*partition.Config, string)                 {}
func mutateGroups(*group.Config, string)                         {}

// Mutations are the names this build can switch off.
func Mutations() []string { return []string{MutationUnclean} }
