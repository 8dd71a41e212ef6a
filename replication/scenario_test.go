package replication

import (
	"os"
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
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, h.run)
	})
}

// TestMutationsBreakTheirScenario checks the files of testdata/mutations/:
// each is <scenario>.<mutation>.txt, begins with `mutate <mutation>`, holds
// exactly the commands of testdata/<scenario>.txt after that, and expects a
// LOST or DIVERGED record (TestScenarios checks that it gets them), while
// the scenario itself expects none. So each protective rule is shown to be
// what keeps its scenario safe.
func TestMutationsBreakTheirScenario(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "mutations", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	covered := map[string]bool{}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		scenario, mutation, ok := strings.Cut(name, ".")
		require.True(t, ok, "%s: name it <scenario>.<mutation>.txt", path)
		covered[mutation] = true
		t.Run(name, func(t *testing.T) {
			_, known := mutationNames[mutation]
			require.True(t, known, "unknown mutation %q", mutation)
			mutated := readScenario(t, path)
			base := readScenario(t, filepath.Join("testdata", scenario+".txt"))
			require.NotEmpty(t, mutated.cmds)
			require.Equal(t, "mutate "+mutation, mutated.cmds[0])
			require.Equal(t, base.cmds, mutated.cmds[1:], "the same commands as %s.txt", scenario)
			require.True(t, mutated.broken, "expected output reports no LOST or DIVERGED record")
			require.False(t, base.broken, "%s.txt itself reports a LOST or DIVERGED record", scenario)
		})
	}
	for m := range mutationNames {
		require.True(t, covered[m], "mutation %s has no scenario in testdata/mutations", m)
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
