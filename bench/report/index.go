package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/matrix"
)

// IndexFile is the index of runs in the results directory.
const IndexFile = "README.md"

// Load reads a run's results.json.
func Load(path string) (*matrix.Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var r matrix.Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	return &r, nil
}

// Runs loads every run under resultsDir (each directory with a
// results.json), newest first. Directories whose results.json cannot be
// read are returned in skipped with the reason.
func Runs(resultsDir string) (runs []*matrix.Run, dirs []string, skipped []string, err error) {
	entries, err := os.ReadDir(resultsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("report: %w", err)
	}
	type loaded struct {
		run *matrix.Run
		dir string
	}
	var all []loaded
	for _, e := range entries {
		path := filepath.Join(resultsDir, e.Name(), ResultsFile)
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			continue
		}
		r, err := Load(path)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", e.Name(), err))
			continue
		}
		all = append(all, loaded{r, e.Name()})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].run.Started.After(all[j].run.Started) })
	for _, l := range all {
		runs, dirs = append(runs, l.run), append(dirs, l.dir)
	}
	return runs, dirs, skipped, nil
}

// WriteIndex rewrites resultsDir/README.md: the list of runs, newest
// first (each run's own report has its tables).
func WriteIndex(resultsDir string) error {
	runs, dirs, skipped, err := Runs(resultsDir)
	if err != nil {
		return err
	}
	rep := &bench.Report{Title: "Benchmark results"}
	s := rep.Section("Engine comparison runs")
	s.Para("Each directory is one run of the end-to-end matrix, `go run ./cmd/bench -profile quick` or `-profile full` (see cmd/bench for the flags): report.md, results.json and the charts. `go run ./cmd/benchcheck` compares a run's ratios with the last committed run of the same profile. The other reports here are the other profiles of the same command, one file each with its JSON beside it: engines.md (`-profile engines`), broker.md (`-profile broker`), groups.md (`-profile groups`), cluster.md (`-profile cluster`), replication.md (`-profile replication`), and the other workloads' (bench/workloads); `go run ./cmd/benchcheck -profile NAME` compares one with its committed version.")
	t := s.Table("run", "profile", "date", "took", "cells with figures", "commit", "load average (start)").Left(1, 5, 6)
	for i, r := range runs {
		t.Row(fmt.Sprintf("[%s](%s/%s)", r.Name, dirs[i], ReportFile), r.Profile.Name, r.Started.UTC().Format("2006-01-02 15:04"),
			took(r), cellsOK(r), shortCommit(r.Commit), r.Machine.LoadAvg)
	}
	if len(skipped) > 0 {
		s.Para("Unreadable runs:")
		s.List(skipped...)
	}
	return bench.WriteFile(filepath.Join(resultsDir, IndexFile), rep.Markdown())
}

// took is how long the run took, to the second.
func took(r *matrix.Run) string { return r.Took().Round(time.Second).String() }

func cellsOK(r *matrix.Run) string {
	ok, all := 0, 0
	for _, c := range r.Cells {
		all++
		if c.OKReps() > 0 {
			ok++
		}
	}
	return fmt.Sprintf("%d/%d", ok, all)
}

// shortCommit shortens a commit hash, keeping a " (dirty)" mark.
func shortCommit(c string) string {
	if len(c) < 40 || strings.HasPrefix(c, "unknown") {
		return c
	}
	return c[:12] + c[40:]
}
