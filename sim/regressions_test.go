package sim

import "testing"

// Seeds that found bugs, kept as regression cases: each must pass.
var regressions = []struct {
	seed uint64
	bug  string
}{
	{73, "replication: a follower whose epoch cache ended with an epoch it led without writing backed off forever and never rejoined the ISR"},
}

func TestRegressions(t *testing.T) {
	for _, rc := range regressions {
		if r := Run(Derive(rc.seed, ProfileCI)); r.Failed() {
			t.Errorf("seed %d (%s):\n%s", rc.seed, rc.bug, FormatFailure(r, 60))
		}
	}
}
