package partition

// Mutations switch a partition's transactional protections off, one each,
// so that the simulator can show that the failure each exists for then
// happens and is caught. They exist only in a build with the mutations tag
// (mutations_on.go, Config.Mutate); in any other build no switch exists
// and none is read (mutations_off.go), as replication's.
const (
	// mutNoTxnVerify: KIP-890's first part off. The first batch of a
	// transaction in a partition is appended without the coordinator's
	// word that the partition is in the producer's ongoing transaction.
	// Breaks: kip-890 (a write that raced its transaction's end opens a
	// transaction no coordinator will end, a hanging transaction that
	// holds the last stable offset back for good, or joins the producer's
	// next transaction and commits an aborted record).
	mutNoTxnVerify = "no-txn-verify"

	// mutLSOAtHW: the last stable offset is the high watermark, so a
	// read_committed read returns the records of undecided transactions.
	// Breaks: read-committed (a consumer reads a record whose transaction
	// then aborts).
	mutLSOAtHW = "lso-at-hw"
)

// MutationNames are the names of the mutations, in the order above.
var MutationNames = []string{mutNoTxnVerify, mutLSOAtHW}
