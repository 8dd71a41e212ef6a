package sim

import "github.com/minikafka/minikafka/cluster"

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
	// Rarely: why the first schedules seldom catch the mutation (the
	// layers behind the protection hold); CaughtBy is then a schedule
	// known to catch it, which TestMutations replays instead.
	Rarely   string
	CaughtBy uint64
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
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.UnsyncedKeepPct, o.DiskEvery = 100, 400, 0, 0, 600
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
			o.Brokers, o.ReplicationFactor, o.MinISR = 5, 3, 2
			o.AcksAllPct, o.CrashEvery, o.PartitionEvery, o.DropPct, o.StallEvery = 100, 0, 400, 1, 300
		},
		Rarely: "masked by the layers behind it: a fetch of another leader epoch is still checked by its " +
			"LastFetchedEpoch (a diverging epoch), an answer by the follower's fetch offset and batch-epoch order, and " +
			"an answer to an earlier role's fetch is dropped by the partition; with stalls delivering fetches seconds " +
			"late, about one schedule in several thousand of this scenario gets a follower to take a newer epoch's batches while " +
			"it follows an older one, which the partition's own epoch check then finds when the stale role makes it leader",
		CaughtBy: 8902,
	},
}

// ScenarioOptions are seed's options tuned for scenario sc, with the
// mutation on when mutate is set.
func ScenarioOptions(sc Scenario, seed uint64, mutate bool) Options {
	o := Derive(seed, ProfileCI)
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
