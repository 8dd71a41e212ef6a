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

// TestEveryMutationAccounted: every mutation of the build is caught by a
// scenario or listed as Uncaught with why, never both, never neither.
func TestEveryMutationAccounted(t *testing.T) {
	seen := map[string]string{}
	for _, sc := range Scenarios {
		seen[sc.Mutation] = "scenario " + sc.Name
	}
	for _, u := range Uncaught {
		if by, ok := seen[u.Mutation]; ok {
			t.Errorf("%s is listed as uncaught, but %s catches it", u.Mutation, by)
		}
		seen[u.Mutation] = "uncaught"
	}
	for _, m := range Mutations() {
		if _, ok := seen[m]; !ok {
			t.Errorf("mutation %s: no scenario catches it and Uncaught does not say why", m)
		}
	}
}
