//go:build mutations

package sim

import (
	"flag"
	"testing"
)

var flagMutationSeeds = flag.Int("sim.mutation.seeds", 2000, "sim: seeds a scenario's mutation has to be caught within")

// TestMutationsCaught runs each named scenario with its protection off:
// the checkers must catch it within -sim.mutation.seeds schedules. It runs
// in a build with the mutations tag only (TestMutations starts it).
func TestMutationsCaught(t *testing.T) {
	for _, sc := range Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(*flagMutationSeeds); seed++ {
				r := Run(ScenarioOptions(sc, seed, true))
				if r.Failed() {
					t.Logf("%s (%s) caught after %d schedules: %s\n  replay: %s", sc.Name, sc.Mutation, seed, r.Violations[0], r.Replay())
					return
				}
			}
			t.Errorf("%s: %s off, and %d schedules broke no property", sc.Name, sc.Mutation, *flagMutationSeeds)
		})
	}
}
