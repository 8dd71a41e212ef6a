package replication

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
)

// TestScenarios runs the replication scenarios of testdata/: one Leader and
// its Followers wired together by hand, every fetch, answer, sync, crash and
// AlterPartition moved by a command, and the trace reviewed as text.
// Rewrite the expectations with `go test ./replication -run Scenarios -rewrite`.
//
// Commands:
//
//	init replicas=<n> min-isr=<n> lag=<ms> sync=always|never
//	mutate <name>                        (first: switch a rule off; mutations.go)
//	produce [acks=all|1] [n=<records>]   at the current leader
//	sync <node>                          fsync the node's log
//	fetch <node> [drop-response] [max=<batches>]
//	late-fetch <node> broker-epoch=<n> offset=<n> last-epoch=<n>
//	                                     a fetch sent long ago reaches the leader
//	alter [err=<KAFKA_ERROR>] [lose-response] [hold-metadata]
//	                                     the controller decides the oldest AlterPartition
//	tick ms=<n>                          time passes; the leader ticks
//	crash <node>                         the process dies; unsynced data is lost
//	restart <node> [empty] [hold-metadata]
//	fence <node> [hold-metadata]         the controller fences the node
//	metadata                             deliver the controller's state
//	state | check
//
// check reports every acknowledged or committed record the current leader
// lacks (LOST) and every replica whose log below its HW differs from what
// was committed (DIVERGED).
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	require.NoError(t, err)
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			h := &harness{}
			datadriven.RunTest(t, path, h.run)
		})
	}
}

// TestMutations runs the scenarios of testdata/mutations/ in a test binary
// built with the mutations tag (the only build in which a rule can be
// switched off), so that `go test ./...` covers them while no other build
// can reach the switches. Skipped with -short.
func TestMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second test binary")
	}
	cmd := exec.Command("go", "test", "-count=1", "-tags", "mutations", "-run", "^TestMutationsBreakTheirScenario$", ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the mutations run failed: %v\n%s", err, out)
	}
}

type scenarioFile struct {
	cmds   []string
	broken bool // some expected output reports a violation
}

// readScenario reads a datadriven file's commands and whether its expected
// output reports a violation. The harness never prints blank lines, so an
// expectation ends at the first one.
func readScenario(t *testing.T, path string) scenarioFile {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var s scenarioFile
	inOutput := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case inOutput && line == "":
			inOutput = false
		case inOutput:
			if strings.HasPrefix(line, "LOST ") || strings.HasPrefix(line, "DIVERGED ") {
				s.broken = true
			}
		case line == "----":
			inOutput = true
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			s.cmds = append(s.cmds, line)
		}
	}
	return s
}
