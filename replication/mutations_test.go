//go:build mutations

package replication

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
)

func setMutation(m *mutations, name string) error { return m.set(name) }

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
			require.True(t, slices.Contains(MutationNames, mutation), "unknown mutation %q", mutation)
			mutated := readScenario(t, path)
			base := readScenario(t, filepath.Join("testdata", scenario+".txt"))
			require.NotEmpty(t, mutated.cmds)
			require.Equal(t, "mutate "+mutation, mutated.cmds[0])
			require.Equal(t, base.cmds, mutated.cmds[1:], "the same commands as %s.txt", scenario)
			require.True(t, mutated.broken, "expected output reports no LOST or DIVERGED record")
			require.False(t, base.broken, "%s.txt itself reports a LOST or DIVERGED record", scenario)
			h := &harness{}
			datadriven.RunTest(t, path, h.run)
		})
	}
	for _, m := range MutationNames {
		if m != mutNoEpochFencing { // the simulator's stale-epoch scenario breaks it
			require.True(t, covered[m], "mutation %s has no scenario in testdata/mutations", m)
		}
	}
}
