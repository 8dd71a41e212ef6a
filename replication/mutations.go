package replication

// Mutations switch protective rules off, one each, so that tests can show
// that the failure each rule exists for then happens: the scenarios of
// testdata/mutations/ (each a scenario of testdata/ run with one mutation,
// whose expected output reports the lost or diverged record) and the
// simulator's. They exist only in a build with the mutations tag
// (mutations_on.go); in any other build no switch exists and none is read
// (mutations_off.go), so the product cannot run with one.
//
// The names, and the rule each switches off:
const (
	// mutTruncateToHW: the rule before KIP-101. A follower truncates to its
	// high watermark when it starts following and fetches without its last
	// epoch, so nothing checks where its log parts from the leader's.
	// Breaks: kip101a (an acknowledged record lost: the follower's HW lags
	// the leader's by one fetch), kip101b (replicas diverged at the same
	// offsets after a double failure stay diverged).
	mutTruncateToHW = "truncate-to-hw"

	// mutLeaderEndOnly: KIP-101 without KIP-279 and KIP-320. On a diverging
	// epoch the follower truncates to the leader's end offset alone, not to
	// min(that, its own end for that epoch), and then fetches without epoch
	// checks, as a follower did once after OffsetForLeaderEpoch. Breaks:
	// kip279 (the leader changed twice quickly; the follower keeps a record
	// of the middle epoch that the leader never had).
	mutLeaderEndOnly = "leader-end-only"

	// mutCountUnsynced: Kafka's rule. Under sync=always a follower fetches,
	// and so reports as its fetch offset, its log end before it is synced.
	// Breaks: fsync (kafka-fsync, Redpanda 2023: followers lose their
	// unsynced tail in a power loss after the HW counted it, one of them is
	// elected, the acknowledged record is gone).
	mutCountUnsynced = "count-unsynced"

	// mutNoEpochFencing: leader epochs are not compared (KIP-320 off): a
	// Leader serves a fetch whatever leader epoch it carries, and a
	// Follower appends batches of an epoch above its own. Meant to break
	// the simulator's stale-leader scenario.
	mutNoEpochFencing = "no-epoch-fencing"

	// mutExpandBeforeEpochStart: a follower joins the ISR once its fetch offset
	// reaches the HW, even below the start of the current leader epoch.
	// Breaks: isr (KAFKA-7128: a new leader's HW lags the acknowledged
	// offsets of the previous epoch; the joiner lacks them and is elected).
	mutExpandBeforeEpochStart = "expand-before-epoch-start"

	// mutIgnoreMinISR: the HW advances while the committed ISR is below
	// MinISR (before KIP-966). Breaks: minisr (the last ISR member commits
	// alone, dies, and the ELR member elected lacks the committed record).
	mutIgnoreMinISR = "ignore-min-isr"

	// mutNoBrokerEpoch: proposals carry broker epoch -1 for every member, as
	// before AlterPartition v3. Breaks: kip903 (a stale expansion puts a
	// replica that rebooted with an empty disk in the ISR; it is elected).
	mutNoBrokerEpoch = "no-broker-epoch"

	// mutHwCommittedISR: the HW is computed over the committed ISR only, so a
	// member being added counts only once its expansion is committed.
	// Breaks: kip497 (the HW passes the joiner while the expansion is in
	// flight; it commits; the joiner is elected without the record).
	mutHwCommittedISR = "hw-committed-isr"

	// mutHwProposedISR: the HW is computed over the proposed ISR while a
	// change is in flight, so a member being removed stops counting the
	// moment its removal is proposed. Breaks: stale-leader (a leader cut
	// off from its followers and from the controller proposes to shrink the
	// ISR to itself and acknowledges alone; the controller never got the
	// proposal, fences the leader and elects a follower that lacks the
	// acknowledged record: Kafka's ZooKeeper-era ISR shrink, Jepsen 2013).
	mutHwProposedISR = "hw-proposed-isr"

	// mutProposeWhilePending: a new proposal replaces one in flight instead of
	// waiting for its answer. Breaks: kip497-pending (the replaced expansion
	// still commits, but its joiner no longer holds the HW back).
	mutProposeWhilePending = "propose-while-pending"
)

// MutationNames are the names of the mutations, in the order above.
var MutationNames = []string{mutTruncateToHW, mutLeaderEndOnly, mutCountUnsynced, mutNoEpochFencing,
	mutExpandBeforeEpochStart, mutIgnoreMinISR, mutNoBrokerEpoch, mutHwCommittedISR, mutHwProposedISR, mutProposeWhilePending}
