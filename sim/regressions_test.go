package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

// Seeds that found bugs, kept as regression cases: each must pass, and
// each replays the schedule that found it. All of them were found before
// the network could stall, so they run without stalls (which Derive now
// draws for some of their seeds, and which would give them other
// schedules). The first four were found while the simulator ran its own model of the
// partition layer; since it runs broker/partition itself they replay other
// schedules, kept because they passed then and must still.
var regressions = []struct {
	seed uint64
	bug  string
}{
	{73, "replication: a follower whose epoch cache ended with an epoch it led without writing backed off forever and never rejoined the ISR"},
	{4723, "replication: a follower refused a fetched batch of an epoch below an empty epoch at its log end, forever"},
	{5731, "replication: the same, on an empty log"},
	{7694, "sim: the producer resent a failed batch's records under a new epoch (a client-made duplicate, not the broker's)"},
	// Found by the simulator running broker/partition (each fails, as
	// noted, with its fix reverted).
	{5, "partition: a follower that truncated a suffix only it had (a diverging epoch) kept its durable end above its log end, " +
		"and could neither lead nor follow again: 'log start 0, durable end 2, end 0 out of order' (truncate.go lowers p.durable; " +
		"first found by the kill-all process test)"},
	{6, "partition: SetState kept a follower built before the broker registered (broker epoch 0) once it had; " +
		"the leader never took it back into the ISR (liveness)"},
	{218, "partition: a follower whose append of fetched batches failed (a full disk) waited for good for a sync of what " +
		"was never stored (liveness)"},
	{925, "partition: an answer to an earlier role's fetch (FENCED_LEADER_EPOCH from the old leader) made the new follower " +
		"wait for metadata that never came (liveness)"},
	{1436, "replication: after INELIGIBLE_REPLICA for a retried proposal carrying a member's broker epoch from before it " +
		"registered again, the leader held every expansion until metadata that never came (liveness)"},
	{6459, "partition: a producer snapshot past a truncation's cut was removed without a directory sync; after a power " +
		"loss it came back under a log that new batches had carried past its offset, and the new leader answered an " +
		"idempotent retry with the offset of a batch its log no longer held (lost-write; producers.go syncs the removal)"},
	{26533, "sim: the lost-write checker wanted a record acknowledged in leader epoch 4 on a broker whose metadata, " +
		"behind, made it the leader of epoch 2 (a false alarm: that epoch had ended before the record was committed)"},
}

// segmentRegressions are seeds found on the segment engine under a sync
// policy (with stalls, as Derive draws them), found once a broker back on
// its disk stays in the ELR of partitions it is the only replica of
// (cluster.Settings.Register), and so leads again what it lost unsynced.
var segmentRegressions = []struct {
	seed uint64
	sync engine.SyncPolicy
	bug  string
}{
	{124, engine.SyncInterval, "sim: a produce acknowledged just before its only holder lost power, the answer arriving " +
		"after, was held lost (the checker took the holders when the answer came, by then none)"},
	{678, engine.SyncNever, "sim: a read of a record lost unsynced, in flight during the power loss, and the read of its " +
		"retry at another offset were taken for a duplicate"},
}

func TestRegressions(t *testing.T) {
	for _, rc := range regressions {
		o := Derive(rc.seed, ProfileCI)
		o.StallEvery = 0
		if r := Run(o); r.Failed() {
			t.Errorf("seed %d (%s):\n%s", rc.seed, rc.bug, FormatFailure(r, 60))
		}
	}
	for _, rc := range segmentRegressions {
		o := Derive(rc.seed, ProfileCI)
		o.Engine, o.Sync = EngineSegment, rc.sync
		if r := Run(o); r.Failed() {
			t.Errorf("seed %d on segment, sync=%s (%s):\n%s", rc.seed, rc.sync, rc.bug, FormatFailure(r, 60))
		}
	}
}

// TestRestartRefusedAmidFailovers: a broker that restarted amid controller
// failovers was refused registration (DUPLICATE_BROKER_REGISTRATION: its
// previous incarnation's session, granted a grace by each new controller,
// had not expired) for longer than 1.5 session timeouts, and its shell
// gave up on it as "another live broker uses node id 2": a healthy broker
// down for good. Found by a family of stalls, metadata stalls, partitions
// and crashes on five brokers, seed 468; node.Lifecycle now retries for as
// long as the refusal lasts, as Kafka's brokers do.
func TestRestartRefusedAmidFailovers(t *testing.T) {
	o := Derive(468, ProfileCI)
	o.Sync, o.Voters, o.RetentionBytes, o.DeleteRecordsEvery, o.LoseDiskPct, o.Engine = engine.SyncAlways, 0, 0, 0, 0, ""
	o.Brokers, o.ReplicationFactor, o.MinISR = 5, 3, 1
	o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.StallEvery, o.MetadataStallEvery = 100, 500, 400, 200, 300
	o.Producers, o.BatchesEach = 3, 20
	if r := Run(o); r.Failed() {
		t.Fatal(FormatFailure(r, 60))
	}
}

// TestNoFetcherOutlivesItsProcess: an answer to a fetch sent before a
// broker lost power reached the fetcher of the dead process once the
// broker had started again, and that fetcher lived on in the new
// incarnation: it appended to the logs the dead process had open and
// fetched from their end with the new incarnation's broker epoch, so the
// leader took the broker back into the ISR for records its recovered log
// had lost, and elected it later without them (lost-write). The product has
// no such ghost: a process's goroutines die with it. Found on segment under
// sync=never, seed 350; the simulator now drops an answer to another
// incarnation's fetch and stops every fetch session with the process.
func TestNoFetcherOutlivesItsProcess(t *testing.T) {
	o := Derive(350, ProfileCI)
	o.Engine, o.Sync, o.Flags = EngineSegment, engine.SyncNever, "-engine segment -sync never"
	if r := Run(o); r.Failed() {
		t.Fatal(FormatFailure(r, 60))
	}
}

// TestFollowerKeepsOpenTransactions: a follower appended a transaction's
// replicated batch without counting it among its open transactions
// (appendReplicatedLocked recorded it in the producer state but did not
// update the readers' view, noteTxnsLocked), so once elected its last
// stable offset was its high watermark: a read_committed consumer read the
// records of a transaction still open there, which then aborted
// (aborted-read). Found by the simulator's first transactional schedules,
// seeds 50 and 96 (a controlled shutdown, then a partition, moved the
// leadership of "tx" while a transaction was open).
func TestFollowerKeepsOpenTransactions(t *testing.T) {
	for _, seed := range []uint64{50, 96} {
		o := Derive(seed, ProfileCI)
		require.True(t, o.transactions(), "seed %d draws no transactions any more: the case needs another seed", seed)
		if r := Run(o); r.Failed() {
			t.Errorf("seed %d:\n%s", seed, FormatFailure(r, 60))
		}
	}
}
