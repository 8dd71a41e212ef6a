package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/matrix"
	"github.com/minikafka/minikafka/bench/result"
	"github.com/minikafka/minikafka/bench/workloads"
)

// runWith makes a run where segment, pebble and kfake produce at the given
// rates at the reference point.
func runWith(name string, started time.Time, seg, peb, kf float64) *matrix.Run {
	r := &matrix.Run{Name: name, Profile: matrix.Profiles["quick"], Facts: bench.Facts{Started: started},
		Targets: []matrix.TargetInfo{{Name: "segment", Kind: matrix.KindEngine}, {Name: "pebble", Kind: matrix.KindEngine}, {Name: "kfake", Kind: matrix.KindPeer}},
		Points:  []matrix.Point{{Workload: matrix.Reference, Slices: []string{matrix.SliceConcurrency}}},
	}
	for _, c := range []struct {
		name string
		rate float64
	}{{"segment", seg}, {"pebble", peb}, {"kfake", kf}} {
		rep := matrix.Rep{Produce: load.ProduceResult{Records: 100, RecordsPerSec: c.rate, Latency: bench.Summary{Count: 1}}}
		r.Cells = append(r.Cells, &matrix.Cell{Cell: bench.Cell[matrix.Rep]{Target: c.name, Reps: []matrix.Rep{rep}}, Workload: matrix.Reference})
	}
	return r
}

func writeRun(t *testing.T, results string, r *matrix.Run) string {
	path := filepath.Join(results, r.Name, "results.json")
	require.NoError(t, bench.WriteJSON(path, r))
	return path
}

func gitRepo(t *testing.T) string {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		require.NoError(t, exec.Command("git", append([]string{"-C", dir}, args...)...).Run())
	}
	return dir
}

func commitAll(t *testing.T, dir string) {
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "runs"}} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
}

func TestCheckAgainstCommittedRun(t *testing.T) {
	repo := gitRepo(t)
	results := filepath.Join(repo, "results")
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	writeRun(t, results, runWith("old", t0, 100, 50, 200))
	other := runWith("other-profile", t0.Add(time.Hour), 10, 50, 200)
	other.Profile.Name = "full"
	writeRun(t, results, other)
	commitAll(t, repo)
	ctx := context.Background()

	cases := []struct {
		name     string
		seg      float64
		wantCode int
		wantOut  string
	}{
		{"same ratios", 100, 0, "no headline ratio dropped"},
		{"10% slower is inside the tolerance", 90, 0, "no headline ratio dropped"},
		{"segment 30% slower against kfake and pebble", 70, 1, "DROP"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "new" + string(rune('a'+i))
			writeRun(t, results, runWith(name, t0.Add(2*time.Hour+time.Duration(i)*time.Minute), c.seg, 50, 200))
			var out, errOut strings.Builder
			code := run(ctx, []string{"-results", results}, &out, &errOut)
			assert.Equal(t, c.wantCode, code, out.String()+errOut.String())
			assert.Contains(t, out.String()+errOut.String(), c.wantOut)
			assert.Contains(t, out.String(), "base: "+filepath.ToSlash("results/old/results.json")+" at HEAD", "the committed run of the same profile")
			require.NoError(t, os.RemoveAll(filepath.Join(results, name)))
		})
	}
}

func TestCheckNeedsSomethingToCompare(t *testing.T) {
	repo := gitRepo(t)
	results := filepath.Join(repo, "results")
	var out, errOut strings.Builder
	assert.Equal(t, 2, run(context.Background(), []string{"-results", results}, &out, &errOut), "no run at all")

	writeRun(t, results, runWith("only", time.Now(), 1, 1, 1))
	commitAll(t, repo)
	errOut.Reset()
	assert.Equal(t, 2, run(context.Background(), []string{"-results", results}, &out, &errOut), "the only committed run is the new one")
	assert.Contains(t, errOut.String(), "no committed quick-profile run")

	base := writeRun(t, t.TempDir(), runWith("b", time.Now(), 1, 1, 1))
	out.Reset()
	assert.Equal(t, 0, run(context.Background(), []string{"-results", results, "-base", base}, &out, &errOut), errOut.String())
	assert.Equal(t, 2, run(context.Background(), []string{"-tolerance", "2"}, &out, &errOut))
}

// brokerFile is a broker workload's result where segment produces at seg
// records/s against kfake's 100.
func brokerFile(t *testing.T, commit string, seg float64) *result.Result {
	w, err := workloads.Load("broker")
	require.NoError(t, err)
	r := &result.Result{Workload: *w}
	r.Commit = commit
	r.Add("throughput", "kfake", result.Rep{Figures: map[string]float64{"produce.records_per_s": 100, "consume.records_per_s": 100}})
	r.Add("throughput", "segment", result.Rep{Figures: map[string]float64{"produce.records_per_s": seg, "consume.records_per_s": 100}})
	return r
}

func TestCheckOneFileReportAgainstHEAD(t *testing.T) {
	repo := gitRepo(t)
	results := filepath.Join(repo, "results")
	require.NoError(t, brokerFile(t, "old", 100).Write(results))
	commitAll(t, repo)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		seg  float64
		code int
		want string
	}{
		{"same", 100, 0, "ok      throughput: produce.records_per_s over kfake, segment"},
		{"30% slower", 70, 1, "DROP    throughput: produce.records_per_s over kfake, segment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, brokerFile(t, "new", c.seg).Write(results))
			var out, errOut strings.Builder
			code := run(ctx, []string{"-results", results, "-profile", "broker"}, &out, &errOut)
			assert.Equal(t, c.code, code, out.String()+errOut.String())
			assert.Contains(t, out.String(), c.want)
			assert.Contains(t, out.String(), "base: results/broker.json at HEAD (commit old)")
		})
	}
	var out, errOut strings.Builder
	assert.Equal(t, 2, run(ctx, []string{"-results", results, "-profile", "engines"}, &out, &errOut), "no engines.json to check")
	assert.Equal(t, 2, run(ctx, []string{"-profile", "nosuch"}, &out, &errOut))
}
