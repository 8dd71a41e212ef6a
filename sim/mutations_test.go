package sim

import (
	"os"
	"os/exec"
	"testing"
)

// TestMutations proves the checkers: it runs TestMutationsCaught in a test
// binary built with the mutations tag (the only build in which a
// protection can be switched off), so that `go test ./...` covers it while
// no production build can reach the hooks. Skipped with -short.
func TestMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second test binary")
	}
	if os.Getenv("SIM_MUTATIONS_CHILD") != "" {
		t.Skip("already the child")
	}
	cmd := exec.Command("go", "test", "-count=1", "-tags", "mutations", "-run", "^TestMutationsCaught$", "-v", ".")
	cmd.Env = append(os.Environ(), "SIM_MUTATIONS_CHILD=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the mutations run failed: %v", err)
	}
}

// TestDeterminism: the same seed twice gives the same trace.
func TestDeterminism(t *testing.T) {
	for _, seed := range []uint64{1, 7, 42, 73, 1234} {
		a, b := Run(Derive(seed, ProfileCI)), Run(Derive(seed, ProfileCI))
		if a.TraceHash != b.TraceHash || a.Stats.Events != b.Stats.Events {
			t.Errorf("seed %d: trace %x (%d events) then %x (%d events)", seed, a.TraceHash, a.Stats.Events, b.TraceHash, b.Stats.Events)
		}
	}
}
