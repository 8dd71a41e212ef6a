package sim

import (
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
)

// Named regression scenarios: the failures others shipped (CLUSTER.md),
// each a family of schedules tuned to provoke it, and the protection whose
// absence it must expose. On the real build every schedule of a scenario
// passes; with the mutation on (a build with the mutations tag, or the
// product setting for unclean election and ELR) the checkers must catch
// it within the scenario's seeds (TestMutations).

// MutationUnclean is the product setting that switches clean elections
// off (unclean.leader.election.enable=true); the other mutations are
// test-only hooks of a build with the mutations tag.
const MutationUnclean = "unclean-election"

// Scenario is a named regression case.
type Scenario struct {
	Name     string
	Why      string
	Mutation string // the protection it needs
	Tune     func(*Options)
}

// Scenarios are the named regression cases.
var Scenarios = []Scenario{
	{
		Name: "kip-101", Mutation: "truncate-to-hw",
		Why: "a follower that truncates to its HW, then leads, loses acknowledged records",
		Tune: func(o *Options) {
			o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 2
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.UnsyncedKeepPct = 100, 600, 900, 100
		},
	},
	{
		Name: "jepsen-2013", Mutation: MutationUnclean,
		Why: "the ISR shrinks to the leader, the leader dies, a stale replica is elected",
		Tune: func(o *Options) {
			o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 1
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery = 100, 700, 600
		},
	},
	{
		Name: "kafka-fsync", Mutation: "count-unsynced",
		Why: "followers lose their unsynced tail in a power loss after the HW counted it",
		Tune: func(o *Options) {
			o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 2
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.UnsyncedKeepPct, o.DiskEvery = 100, 400, 0, 0, 300
			o.SlowDisks = true // a follower's sync that outlasts its fetcher's wait for it
		},
	},
	{
		Name: "kip-966", Mutation: cluster.MutationNoELR,
		Why: "last replica standing: the ISR shrinks to one, it dies, only an unclean election recovers",
		Tune: func(o *Options) {
			o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 2
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.UnsyncedKeepPct = 100, 500, 800, 0
			o.LostBroker = 1 + int32(o.Seed%3)
		},
	},
	{
		Name: "stale-leader", Mutation: "hw-proposed-isr",
		Why: "a leader cut off by a partition shrinks the ISR to itself on its own and acknowledges alone",
		Tune: func(o *Options) {
			o.Brokers, o.ReplicationFactor, o.MinISR = 5, 3, 1
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.DropPct = 100, 0, 400, 1
		},
	},
	{
		Name: "stale-epoch", Mutation: "no-epoch-fencing",
		Why: "a leader of an old epoch serves followers of a newer one (KIP-320 off)",
		Tune: func(o *Options) {
			// Leaderships that go away and come back (controlled shutdowns,
			// then preferred leaders restored) while a follower's metadata
			// lags: it fetches from a leader of a newer epoch than it knows.
			o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 1
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.StallEvery = 50, 0, 0, 0
			o.Topics, o.Partitions, o.Producers, o.BatchesEach = 1, 1, 3, 40
			o.ControlledStop, o.ShutdownEvery, o.MetadataStallEvery = true, 500, 300
		},
	},
	{
		Name: "min-isr", Mutation: "ignore-min-isr",
		Why: "the high watermark advances while the ISR is below min.insync.replicas; its last member dies and an ELR member without the record leads",
		Tune: func(o *Options) {
			o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 2
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.UnsyncedKeepPct = 100, 500, 500, 0
		},
	},
	{
		Name: "kip-966-unclean-shutdown", Mutation: cluster.MutationUncleanShutdownInELR,
		Why: "an ELR member back from an unclean shutdown with less than it had stays eligible and is elected",
		Tune: func(o *Options) {
			o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 2
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.UnsyncedKeepPct, o.LoseDiskPct = 100, 400, 700, 0, 50
		},
	},
	{
		Name: "kip-497", Mutation: "hw-committed-isr",
		Why: "the high watermark passes a joiner while its expansion is in flight; the expansion commits and the joiner, elected, lacks the record",
		Tune: func(o *Options) {
			// Partitions close together on five brokers: ISRs shrink and
			// grow again while producers keep the leaders busy.
			o.Brokers, o.ReplicationFactor, o.MinISR = 5, 3, 1
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.DropPct = 100, 0, 250, 0
			o.Producers, o.BatchesEach = 3, 20
		},
	},
	{
		Name: "kip-279", Mutation: "leader-end-only",
		Why: "leadership moves twice quickly; a follower truncating to the leader's end alone keeps a record of the middle epoch the leader never had",
		Tune: func(o *Options) {
			// kip-101's family, with slow links and quick restarts: a leader
			// serves its followers before its own fsync, so a record that
			// only some replicas hold lives about one network delay, and a
			// crashed broker must be back within it to lead again.
			o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 2
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.UnsyncedKeepPct = 100, 600, 900, 100
			o.DelayMin, o.DelayMax, o.QuickRestarts = 1, 30, true
		},
	},
	{
		Name: "kafka-7128", Mutation: "expand-before-epoch-start",
		Why: "a new leader's high watermark lags the records the previous one acknowledged; a follower between the two joins the ISR without them",
		Tune: func(o *Options) {
			// Leaders that restart with the high watermark of their last
			// checkpoint and are elected with the ISR below
			// min.insync.replicas (so it stays there), beside followers
			// that lost their disks or fell behind.
			o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 2
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.UnsyncedKeepPct, o.LoseDiskPct = 100, 400, 700, 0, 50
			o.Topics, o.Partitions = 2, 2
		},
	},
	{
		Name: "kip-497-pending", Mutation: "propose-while-pending",
		Why: "a leader replaces an expansion in flight with another ISR change; the expansion still commits, and the high watermark passes its joiner",
		Tune: func(o *Options) {
			// Followers cut off and back together (several ISR changes of
			// one leader close together), with slow links so that each
			// change is long in flight.
			o.Brokers, o.ReplicationFactor, o.MinISR = 5, 3, 1
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.DelayMax = 100, 0, 500, 50
			o.Producers, o.BatchesEach = 3, 20
		},
	},
	{
		Name: "kip-841", Mutation: cluster.MutationAlterFencedMembers,
		Why: "a leader whose metadata lags adds a broker that is shutting down or fenced back to the ISR",
		Tune: func(o *Options) {
			// Controlled shutdowns often, metadata stalls so that leaders
			// learn of them late, partitions so that followers leave the
			// ISR and come back.
			o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 1
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.MetadataStallEvery = 100, 0, 500, 300
			o.ControlledStop, o.ShutdownEvery = true, 300
			o.Producers, o.BatchesEach = 3, 20
		},
	},
	{
		Name: "stale-alter-partition", Mutation: cluster.MutationAlterStaleEpochs,
		Why: "an ISR change decided on an ISR the controller has changed since reaches it late (a retry whose first answer was lost) and puts back a member that fell behind",
		Tune: func(o *Options) {
			// Partitions that cut leaders' answers from the controller
			// (their proposals are retried), slow links, and metadata
			// stalls so that leaders act on an ISR the controller has
			// changed since.
			o.Brokers, o.ReplicationFactor, o.MinISR = 5, 3, 1
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.DelayMax, o.MetadataStallEvery = 100, 0, 400, 50, 300
			o.Producers, o.BatchesEach = 3, 20
		},
	},
	{
		Name: "kip-890", Mutation: "no-txn-verify",
		Why: "a transactional write that outlives its transaction (the client gave up on it and aborted) lands later and opens a transaction nobody ends, or joins the next",
		Tune: func(o *Options) {
			// Stalled links hold writes for seconds, beyond the clients'
			// patience; both transaction versions.
			txnWorkload(o)
			o.StallEvery, o.PartitionEvery, o.CrashEvery, o.DropPct, o.DelayMax = 300, 0, 0, 0, 20
			o.TxnGiveUpMs, o.TxnV1Pct = 400, 50
		},
	},
	{
		Name: "read-committed", Mutation: "lso-at-hw",
		Why: "read_committed reads to the high watermark: a consumer reads a transaction that then aborts",
		Tune: func(o *Options) {
			txnWorkload(o)
			o.TxnAbortPct = 50
		},
	},
	{
		Name: "txn-offsets", Mutation: "txn-offsets-at-once",
		Why: "offsets committed in a transaction show before its commit marker and outlive its abort: a copier resumes past an aborted transaction's input, which nobody copies",
		Tune: func(o *Options) {
			txnWorkload(o)
			o.TxnProducers, o.Copiers, o.CopyRecords, o.TxnAbortPct, o.TxnConsumers = 1, 2, 5, 30, false
		},
	},
	{
		Name: "kip-903", Mutation: "no-broker-epoch",
		Why:  "a broker back on an empty disk is put in the ISR by an expansion built from a fetch of its previous incarnation, sent without broker epochs",
		Tune: kip903,
	},
	{
		Name: "kip-903-controller", Mutation: cluster.MutationAlterAnyBrokerEpoch,
		Why:  "the same expansion, its broker epochs sent and not compared with the registration (kip-903's family: neither check masks the other)",
		Tune: kip903,
	},
}

// kip903 is the family of the two KIP-903 checks: the only controller
// (one voter) is the broker that crashes, and it comes back at once on an
// empty disk, as a supervisor restarts a killed process on a fresh volume;
// a leader that evaluates a fetch its previous incarnation left parked (or
// learns it leads after that fetch arrived) proposes it with that
// incarnation's position while no controller answers; the first one back
// is the broker itself, which registers and unfences at once, before the
// proposal's next try. Small fetch answers keep the empty replica behind
// for a while.
func kip903(o *Options) {
	o.Brokers, o.Voters, o.ReplicationFactor, o.MinISR = 4, 1, 3, 1
	o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.UnsyncedKeepPct, o.LoseDiskPct = 100, 300, 0, 0, 100
	o.CrashController, o.QuickRestarts, o.FetchMaxBytes = true, true, 200
	o.Producers, o.BatchesEach = 3, 30
}

// txnWorkload is a transactional workload on a replicated cluster.
func txnWorkload(o *Options) {
	o.Brokers, o.ReplicationFactor, o.MinISR = 3, 3, 2
	o.TxnProducers, o.TxnsEach, o.TxnAbortPct, o.TxnV1Pct = 3, 6, 30, 50
	o.TxnPartitions, o.TxnStatePartitions, o.TxnConsumers, o.TxnGiveUpMs = 3, 2, true, 1000
	o.Producers, o.Consumers, o.TopicChurn = 1, 0, false
}

// ScenarioOptions are seed's options tuned for scenario sc, with the
// mutation on when mutate is set.
func ScenarioOptions(sc Scenario, seed uint64, mutate bool) Options {
	o := Derive(seed, ProfileCI)
	// A scenario's schedule is the protection's: the configuration space
	// the seeds draw (sync policies, non-voters, retention, replaced disks,
	// metadata stalls) only where its Tune asks for it.
	o.Sync, o.Voters, o.RetentionBytes, o.DeleteRecordsEvery, o.LoseDiskPct, o.MetadataStallEvery = engine.SyncAlways, 0, 0, 0, 0, 0
	o.TxnProducers, o.Copiers = 0, 0 // transactions only where Tune asks for them
	sc.Tune(&o)
	o.Scenario = sc.Name
	if mutate {
		o.Mutation = sc.Mutation
	}
	return o
}

// applySettings turns the mutations that are product settings on.
func (o *Options) applySettings() {
	if o.Mutation == MutationUnclean {
		o.Unclean = true
	}
}

// Uncaught are the mutations that no schedule family catches yet, each
// with the interleaving a schedule would need to expose it. They stay
// listed, in the report too, until a scenario catches them;
// TestEveryMutationAccounted keeps this list and Scenarios together
// covering every mutation.
var Uncaught []struct{ Mutation, Why string }
