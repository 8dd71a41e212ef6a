package broker

// AlterPartition: v0-3 (controller listener)
//
// Behaviour:
//   - A partition leader's ISR change (node.AlterPartitionRequest, one
//     change in flight per partition, KIP-497), decided by
//     cluster.Settings.AlterPartition and answered once committed with the
//     partition's new state (leader epoch, partition epoch, ISR).
//   - Refusals: STALE_BROKER_EPOCH (the leader's own epoch is not its
//     registration), NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH (an
//     earlier leader epoch), INVALID_UPDATE_VERSION (a stale partition
//     epoch: the ISR changed since), INVALID_REQUEST (no leader in the ISR,
//     a non-replica), INELIGIBLE_REPLICA (a member added that is fenced or
//     shutting down, KIP-841, or whose fetch carried another broker epoch
//     than its registration, KIP-903), UNKNOWN_TOPIC_ID.
//   - An ISR that takes in the last replica a reassignment adds completes
//     the reassignment in the same record.
//
// Version notes:
//   - v1: LeaderRecoveryState (always recovered here); v2: topic ids
//     instead of names; v3: NewIsrWithEpochs (each member with the broker
//     epoch its leader saw it fetch with, KIP-903).

func init() { registerController(56, 0, 3, handleControllerAPI) }
