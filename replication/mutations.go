package replication

// mutations switch protective rules off, one each, so that tests can show
// that the scenario each rule exists for then fails (testdata/mutations/:
// every file there is a scenario of testdata/ run with one mutation, and its
// expected output reports the lost or diverged record). They are unexported
// and set only by this package's tests, through the unexported field of
// LeaderConfig and FollowerConfig; the simulator will need them exported as
// test-only hooks later, and this is the one place that lists them.
//
// The zero value is the real, protected behaviour.
type mutations struct {
	// Follower.

	// truncateToHW: the rule before KIP-101. A follower truncates to its
	// high watermark when it starts following and fetches without its last
	// epoch, so nothing checks where its log parts from the leader's.
	// Breaks: kip101a (an acknowledged record lost: the follower's HW lags
	// the leader's by one fetch), kip101b (replicas diverged at the same
	// offsets after a double failure stay diverged).
	truncateToHW bool
	// leaderEndOnly: KIP-101 without KIP-279 and KIP-320. On a diverging
	// epoch the follower truncates to the leader's end offset alone, not to
	// min(that, its own end for that epoch), and then fetches without epoch
	// checks, as a follower did once after OffsetForLeaderEpoch. Breaks:
	// kip279 (the leader changed twice quickly; the follower keeps a record
	// of the middle epoch that the leader never had).
	leaderEndOnly bool
	// countUnsynced: Kafka's rule. Under sync=always a follower fetches,
	// and so reports as its fetch offset, its log end before it is synced.
	// Breaks: fsync (kafka-fsync, Redpanda 2023: followers lose their
	// unsynced tail in a power loss after the HW counted it, one of them is
	// elected, the acknowledged record is gone).
	countUnsynced bool

	// Both.

	// noEpochFencing: leader epochs are not compared (KIP-320 off): a
	// Leader serves a fetch whatever leader epoch it carries, and a
	// Follower appends batches of an epoch above its own. Meant to break
	// the simulator's stale-leader scenario.
	noEpochFencing bool

	// Leader.

	// expandBeforeEpochStart: a follower joins the ISR once its fetch offset
	// reaches the HW, even below the start of the current leader epoch.
	// Breaks: isr (KAFKA-7128: a new leader's HW lags the acknowledged
	// offsets of the previous epoch; the joiner lacks them and is elected).
	expandBeforeEpochStart bool
	// ignoreMinISR: the HW advances while the committed ISR is below
	// MinISR (before KIP-966). Breaks: minisr (the last ISR member commits
	// alone, dies, and the ELR member elected lacks the committed record).
	ignoreMinISR bool
	// noBrokerEpoch: proposals carry broker epoch -1 for every member, as
	// before AlterPartition v3. Breaks: kip903 (a stale expansion puts a
	// replica that rebooted with an empty disk in the ISR; it is elected).
	noBrokerEpoch bool
	// hwCommittedISR: the HW is computed over the committed ISR only, so a
	// member being added counts only once its expansion is committed.
	// Breaks: kip497 (the HW passes the joiner while the expansion is in
	// flight; it commits; the joiner is elected without the record).
	hwCommittedISR bool
	// hwProposedISR: the HW is computed over the proposed ISR while a
	// change is in flight, so a member being removed stops counting the
	// moment its removal is proposed. Breaks: stale-leader (a leader cut
	// off from its followers and from the controller proposes to shrink the
	// ISR to itself and acknowledges alone; the controller never got the
	// proposal, fences the leader and elects a follower that lacks the
	// acknowledged record: Kafka's ZooKeeper-era ISR shrink, Jepsen 2013).
	hwProposedISR bool
	// proposeWhilePending: a new proposal replaces one in flight instead of
	// waiting for its answer. Breaks: kip497-pending (the replaced expansion
	// still commits, but its joiner no longer holds the HW back).
	proposeWhilePending bool
}
