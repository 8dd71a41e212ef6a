package sim

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

var (
	flagSeeds = flag.Int("sim.seeds", 1000, "sim: schedules of the CI profile")
	flagSeed  = flag.Uint64("sim.seed", 0, "sim: run this seed only")
)

// TestSchedules is the CI profile: -sim.seeds short schedules from seed 1,
// each with its own cluster size, fault mix and workload, and none may
// break a property. A failure prints the command that replays it.
func TestSchedules(t *testing.T) {
	first, n := uint64(1), uint64(*flagSeeds)
	if *flagSeed != 0 {
		first, n = *flagSeed, 1
	}
	failed := 0
	for seed := first; seed < first+n && failed < 3; seed++ {
		r := Run(Derive(seed, ProfileCI))
		if r.Failed() {
			failed++
			t.Errorf("seed %d failed:\n%s", seed, FormatFailure(r, 60))
		}
	}
}

// TestScenarios runs every named regression scenario on the real build:
// none may break a property.
func TestScenarios(t *testing.T) {
	family := map[Options]string{} // a family's first schedule, unnamed, to the scenario that ran it
	for _, sc := range Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			first := ScenarioOptions(sc, 1, false)
			first.Scenario = ""
			if other, ok := family[first]; ok {
				t.Skipf("%s's family: the real build runs the same schedules", other)
			}
			family[first] = sc.Name
			for seed := uint64(1); seed <= 40; seed++ {
				if r := Run(ScenarioOptions(sc, seed, false)); r.Failed() {
					t.Fatalf("%s (%s) on the real build:\n%s", sc.Name, sc.Why, FormatFailure(r, 60))
				}
			}
		})
	}
}

// TestNonVoters: brokers that are not voters follow the metadata log,
// register, lead and follow: a schedule without faults converges, which
// needs every broker registered, unfenced and holding its replicas.
func TestNonVoters(t *testing.T) {
	o := Derive(3, ProfileCI)
	o.Brokers, o.Voters, o.ReplicationFactor, o.MinISR = 5, 2, 3, 2
	o.CrashEvery, o.PartitionEvery, o.StallEvery, o.DiskEvery, o.DropPct, o.DupPct = 0, 0, 0, 0, 0, 0
	o.Topics, o.Partitions = 2, 2
	if r := Run(o); r.Failed() {
		t.Fatal(FormatFailure(r, 60))
	}
}

// TestLogStartMoves: retention and DeleteRecords move the log start under
// producers and consumers, which reset to it; nothing is lost but what
// they take.
func TestLogStartMoves(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		o := Derive(seed, ProfileCI)
		o.RetentionBytes, o.DeleteRecordsEvery, o.Consumers = 600, 300, 2
		r := Run(o)
		if r.Failed() {
			t.Fatal(FormatFailure(r, 60))
		}
		if r.Stats.Faults["delete-records"] > 0 && r.Stats.Faults["consumer-reset"] > 0 {
			return
		}
	}
	t.Fatal("no schedule moved a log start under a consumer")
}

// TestSegmentEngine: schedules on the product's segment engine, under every
// sync policy, are clean and replay exactly, and power losses leave it
// unsynced tails that its own recovery cuts.
func TestSegmentEngine(t *testing.T) {
	cut := 0
	for seed := uint64(1); seed <= 150; seed++ {
		o := Derive(seed, ProfileCI)
		o.Engine = EngineSegment
		o.Sync = []engine.SyncPolicy{engine.SyncAlways, engine.SyncInterval, engine.SyncNever}[seed%3]
		o.Flags = "-engine segment -sync " + o.Sync.String() // for the replay line
		r := Run(o)
		if r.Failed() {
			t.Fatal(FormatFailure(r, 60))
		}
		if seed <= 3 {
			if again := Run(o); again.TraceHash != r.TraceHash {
				t.Errorf("seed %d on segment: trace %x, then %x", seed, r.TraceHash, again.TraceHash)
			}
		}
		cut += r.Stats.Faults["segment-tail-cut"]
	}
	require.Positive(t, cut, "no power loss left segment a tail to cut: its recovery never ran on one")
}
