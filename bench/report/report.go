// Package report renders a matrix run (bench/matrix) as results/<run>/:
// report.md in bench/result's tables and charts (result.go), results.json
// (the run itself, which cmd/benchcheck reads);
// keeps results/README.md as the index of runs; and computes the ratios
// the regression check compares between runs. No prose is made from the
// figures.
package report

import (
	"fmt"
	"os"
	"path/filepath"

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
	res := Result(run)
	if err := res.WriteCharts(dir); err != nil {
		return err
	}
	return bench.WriteFile(filepath.Join(dir, ReportFile), res.Markdown())
}
