// Package report renders a matrix run (bench/matrix) as results/<run>/:
// report.md, results.json and PNG charts (gonum.org/v1/plot); keeps
// results/README.md as the index of runs; and computes the ratios the
// regression check (cmd/benchcheck) compares between runs.
//
// Every number in the report is read from the run; the text around the
// tables says how they were measured, and no prose is generated from the
// figures.
package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/matrix"
)

// Files of a run directory.
const (
	ReportFile  = "report.md"
	ResultsFile = "results.json"
)

// Write renders run into dir: results.json, the charts, report.md.
func Write(run *matrix.Run, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := bench.WriteJSON(filepath.Join(dir, ResultsFile), run); err != nil {
		return err
	}
	charts, err := WriteCharts(run, dir)
	if err != nil {
		return err
	}
	return bench.WriteFile(filepath.Join(dir, ReportFile), Markdown(run, charts))
}

// Markdown renders the report.
func Markdown(run *matrix.Run, charts []Chart) []byte {
	v := &view{run: run, charts: map[string]Chart{}}
	for _, c := range charts {
		v.charts[c.File] = c
	}
	rep := &bench.Report{Title: fmt.Sprintf("Engine comparison: %s (%s profile)", run.Name, run.Profile.Name)}
	v.intro(rep)
	v.summary(rep)
	v.concurrency(rep)
	v.groupCommit(rep)
	v.sizes(rep)
	v.latency(rep)
	v.variants(rep)
	v.reads(rep)
	v.amplification(rep)
	v.resources(rep)
	v.recovery(rep)
	v.enginesRef(rep)
	v.missing(rep)
	v.setup(rep)
	return rep.Markdown()
}

// view is a run being rendered.
type view struct {
	run    *matrix.Run
	charts map[string]Chart
}

// chart adds the chart's image to s if it was drawn.
func (v *view) chart(s *bench.Section, file string) {
	if c, ok := v.charts[file]; ok {
		s.Para("![%s](%s)", c.Title, c.File)
	}
}

// engines are the targets under comparison (the broker over a durable
// engine), in run order.
func (v *view) engines() []string {
	var out []string
	for _, t := range v.run.Targets {
		if t.Kind == matrix.KindEngine {
			out = append(out, t.Name)
		}
	}
	return out
}

// interval is the sync=interval fsync period the run used.
func (v *view) interval() string {
	if v.run.SyncInterval <= 0 {
		return "interval set by the broker's -sync-interval"
	}
	return v.run.SyncInterval.String()
}

func (v *view) targets() []string {
	out := make([]string, len(v.run.Targets))
	for i, t := range v.run.Targets {
		out[i] = t.Name
	}
	return out
}

// med is a cell's median of fig, NaN when missing.
func (v *view) med(target string, w matrix.Workload, fig matrix.Figure) float64 {
	return v.run.Cell(target, w).Median(fig)
}

// fig formats a cell's figure as "median [min–max]" (the range only with
// more than one repetition); "missing" for a cell that ran and has no
// figure because it failed, "–" for a figure not measured.
func (v *view) fig(target string, w matrix.Workload, f matrix.Figure, format func(float64) string) string {
	c := v.run.Cell(target, w)
	if c == nil {
		return ""
	}
	if len(c.Reps) > 0 && c.OKReps() == 0 {
		return "missing"
	}
	return spreadText(c.Spread(f), format)
}

func spreadText(s bench.Spread, format func(float64) string) string {
	if !s.OK() {
		return "–"
	}
	if s.N == 1 || format(s.Min) == format(s.Max) {
		return format(s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", format(s.Median), format(s.Min), format(s.Max))
}

// Formats; a figure not measured (NaN) reads "–".
func rate(x float64) string   { return bench.Rate(x) }
func millis(x float64) string { return bench.Millis(x) }
func ratio(x float64) string  { return bench.Times(x) }
func mbps(x float64) string   { return orDash(x, "%.1f") }
func amp(x float64) string    { return orDash(x, "%.2f") }
func plain(x float64) string  { return orDash(x, "%.3g") }
func bytesOf(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return bench.Bytes(int64(x))
}

func orDash(x float64, format string) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return fmt.Sprintf(format, x)
}

// sortWorkloads orders workloads by record size, then in-flight count,
// then producers: the order of the sweeps' axes.
func sortWorkloads(ws []matrix.Workload) {
	sort.SliceStable(ws, func(i, j int) bool {
		a, b := ws[i], ws[j]
		if a.RecordBytes != b.RecordBytes {
			return a.RecordBytes < b.RecordBytes
		}
		if a.InFlight != b.InFlight {
			return a.InFlight < b.InFlight
		}
		return a.Producers < b.Producers
	})
}

// div is a/b, NaN when either is missing or b is 0.
func div(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}

// leader returns the name with the largest value and the ratio to the
// runner-up (NaN with fewer than two values).
func leader(names []string, value func(string) float64) (best string, bestV, vsNext float64, next string) {
	bestV, nextV := math.NaN(), math.NaN()
	for _, n := range names {
		x := value(n)
		if math.IsNaN(x) {
			continue
		}
		switch {
		case math.IsNaN(bestV) || x > bestV:
			next, nextV = best, bestV
			best, bestV = n, x
		case math.IsNaN(nextV) || x > nextV:
			next, nextV = n, x
		}
	}
	return best, bestV, div(bestV, nextV), next
}
