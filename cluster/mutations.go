package cluster

// Mutations switch one of the controller's protective rules off, so that
// the simulator can show the failure each exists for then happens. They
// exist only in a build with the mutations tag (mutations_on.go, through
// Settings.Mutate); in any other build none exists and none is read
// (mutations_off.go).
//
// The names, and the rule each switches off:
const (
	// MutationNoELR: eligible leader replicas (KIP-966). Members that
	// leave an ISR below min.insync.replicas are forgotten, and the last
	// member is never removed instead (the rule before KIP-966). Breaks:
	// the last replica standing waits for an unclean election.
	MutationNoELR = "elr-off"
	// MutationAlterStaleEpochs: AlterPartition's leader epoch and partition
	// epoch are not checked (KIP-497; epoch fencing at the controller): a
	// leader's proposal made on an ISR that has changed since, or by a
	// leader of an earlier epoch, is applied.
	MutationAlterStaleEpochs = "alter-stale-epochs"
	// MutationAlterAnyBrokerEpoch: the broker epoch a member's fetch
	// carried is not checked against its registration (KIP-903): a replica
	// that rebooted with an empty disk joins the ISR on a fetch of its
	// previous incarnation.
	MutationAlterAnyBrokerEpoch = "alter-any-broker-epoch"
	// MutationAlterFencedMembers: a fenced or shutting-down replica may
	// join an ISR (KIP-841).
	MutationAlterFencedMembers = "alter-fenced-members"
	// MutationUncleanShutdownInELR: a broker that registers after an
	// unclean shutdown stays in the ELRs it was in (KIP-966), though it
	// may have lost what it had not synced.
	MutationUncleanShutdownInELR = "unclean-shutdown-in-elr"
)

// MutationNames are the controller's mutations.
var MutationNames = []string{MutationNoELR, MutationAlterStaleEpochs, MutationAlterAnyBrokerEpoch,
	MutationAlterFencedMembers, MutationUncleanShutdownInELR}
