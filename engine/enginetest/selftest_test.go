package enginetest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engines/memory"
)

// The suite must pass an engine that keeps its promises...
func TestSuitePassesACorrectEngine(t *testing.T) {
	Run(t, flawedDriver(bugNone))
}

// ...and the reference engine, whose durable cases skip.
func TestSuitePassesTheMemoryEngine(t *testing.T) {
	Run(t, memory.Driver)
}

// bugEnv names the bug of the engine TestBrokenEngine runs the suite on.
const bugEnv = "ENGINETEST_BUG"

// TestBrokenEngine is run by TestSuiteFailsEachCaseOnItsBrokenEngine in a
// child process: a failing case fails the test that runs it, which this
// process must not.
func TestBrokenEngine(t *testing.T) {
	bug, ok := os.LookupEnv(bugEnv)
	if !ok {
		t.Skip("run by TestSuiteFailsEachCaseOnItsBrokenEngine in a child process")
	}
	Run(t, flawedDriver(bug))
}

// ...and must fail each case on the engine built to break what it checks:
// a case that passes a broken engine cannot fail.
func TestSuiteFailsEachCaseOnItsBrokenEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in a child process per case")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bug, ok := bugs[c.name]
			require.True(t, ok, "case %s has no broken engine in bugs: add one that breaks what it checks", c.name)
			failsOn(t, self, c.name, bug)
		})
	}
	for _, c := range storeCases {
		t.Run("Store/"+c.name, func(t *testing.T) {
			bug, ok := storeBugs[c.name]
			require.True(t, ok, "store case %s has no broken store in storeBugs: add one that breaks what it checks", c.name)
			failsOn(t, self, "Store/"+c.name, bug)
		})
	}
}

// failsOn runs the case called name (a subtest path) of the suite in a
// child process on the engine with bug, and checks that it fails.
func failsOn(t *testing.T, self, name, bug string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "-test.run=^TestBrokenEngine$/"+runPath(name), "-test.v")
	cmd.Env = append(os.Environ(), bugEnv+"="+bug)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the suite passed an engine that %s:\n%s", bug, out)
	assert.Contains(t, string(out), "--- FAIL: TestBrokenEngine/"+name+" ", "the case itself fails:\n%s", out)
	t.Logf("an engine that %s: %s", bug, firstFinding(string(out)))
}

// runPath is a -test.run pattern for exactly the subtest path name.
func runPath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + p + "$"
	}
	return strings.Join(parts, "/")
}

// firstFinding is the first line of the failure's message.
func firstFinding(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "Messages:"); ok {
			return strings.TrimSpace(m)
		}
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "Error:"); ok && strings.TrimSpace(m) != "" {
			return strings.TrimSpace(m)
		}
	}
	return "(see the output with -v)"
}
