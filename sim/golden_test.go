package sim

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var flagGoldenUpdate = flag.Bool("sim.golden.update", false, "sim: rewrite testdata/golden.txt with the trace hashes of this build")

// goldenSeeds are the schedules whose trace hashes are pinned.
var goldenSeeds = []uint64{1, 2, 3, 42, 73, 1000, 4242}

// TestGoldenTraces pins the trace hash of a handful of seeds: a change
// that alters what the simulator's schedules do (a new draw, a changed
// decision in the product, a different order of events) shows here, so
// that "replay seed N" keeps meaning what it meant. When the change is
// meant, rewrite the file with `go test ./sim -run GoldenTraces
// -sim.golden.update` and commit it with the change.
func TestGoldenTraces(t *testing.T) {
	path := filepath.Join("testdata", "golden.txt")
	got := map[uint64]uint64{}
	var b strings.Builder
	b.WriteString("# seed trace-hash (go test ./sim -run GoldenTraces -sim.golden.update rewrites it)\n")
	for _, seed := range goldenSeeds {
		r := Run(Derive(seed, ProfileCI))
		require.False(t, r.Failed(), "seed %d: %s", seed, FormatFailure(r, 40))
		got[seed] = r.TraceHash
		fmt.Fprintf(&b, "%d %x\n", seed, r.TraceHash)
	}
	if *flagGoldenUpdate {
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
		return
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run with -sim.golden.update")
	want := map[uint64]uint64{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(line, "#") {
			continue
		}
		seed, err1 := strconv.ParseUint(f[0], 10, 64)
		hash, err2 := strconv.ParseUint(f[1], 16, 64)
		require.NoError(t, err1)
		require.NoError(t, err2)
		want[seed] = hash
	}
	for _, seed := range goldenSeeds {
		if got[seed] != want[seed] {
			t.Errorf("seed %d: trace hash %x, pinned %x: the schedules changed (see the test's comment to update them on purpose)", seed, got[seed], want[seed])
		}
	}
}

// TestSchedulesRunConcurrently: cmd/sim runs several schedules at once,
// which is sound only if a schedule shares nothing with another. The
// pinned seeds run together (under -race, any shared state is a report)
// must give the same trace hashes as one by one.
func TestSchedulesRunConcurrently(t *testing.T) {
	seeds := goldenSeeds[:4]
	alone := map[uint64]uint64{}
	for _, seed := range seeds {
		alone[seed] = Run(Derive(seed, ProfileCI)).TraceHash
	}
	together := make([]uint64, len(seeds))
	var wg sync.WaitGroup
	for i, seed := range seeds {
		wg.Go(func() { together[i] = Run(Derive(seed, ProfileCI)).TraceHash })
	}
	wg.Wait()
	for i, seed := range seeds {
		require.Equal(t, alone[seed], together[i], "seed %d: a different schedule when run beside others", seed)
	}
}
