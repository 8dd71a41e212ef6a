package group

// Mutations switch a group coordinator's protection off, so that the
// simulator can show that the failure it exists for then happens and is
// caught. They exist only in a build with the mutations tag
// (mutations_on.go, Config.Mutate); in any other build no switch exists
// and none is read (mutations_off.go), as the partitions' and
// replication's.
const (
	// mutTxnOffsetsAtOnce: offsets committed in a transaction
	// (TxnOffsetCommit) become the group's as soon as they are appended,
	// as a plain commit's would, instead of at the transaction's commit
	// marker, and an abort leaves them. Breaks: exactly-once (a
	// consume-transform-produce client whose transaction aborts starts
	// the next one past the aborted one's input, which is never copied).
	mutTxnOffsetsAtOnce = "txn-offsets-at-once"
)

// MutationNames are the names of the mutations, in the order above.
var MutationNames = []string{mutTxnOffsetsAtOnce}
