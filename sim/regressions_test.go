package sim

import "testing"

// Seeds that found bugs, kept as regression cases: each must pass.
var regressions = []struct {
	seed uint64
	bug  string
}{
	{73, "replication: a follower whose epoch cache ended with an epoch it led without writing backed off forever and never rejoined the ISR"},
	{4723, "replication: a follower refused a fetched batch of an epoch below an empty epoch at its log end, forever"},
	{5731, "replication: the same, on an empty log"},
	{7694, "sim: the producer resent a failed batch's records under a new epoch (a client-made duplicate, not the broker's)"},
}

func TestRegressions(t *testing.T) {
	for _, rc := range regressions {
		if r := Run(Derive(rc.seed, ProfileCI)); r.Failed() {
			t.Errorf("seed %d (%s):\n%s", rc.seed, rc.bug, FormatFailure(r, 60))
		}
	}
}
