package logbench

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/minikafka/minikafka/bench/result"
	"github.com/minikafka/minikafka/bench/workloads"
)

// The engines profile's run in the one result schema (bench/result): a
// cell per workload of the run, a repetition per sample, the subjects as
// the servers, and the report's columns and targets as the data of the
// workload it carries, so that result renders and judges it as it does
// every other profile's run. The measuring stays here: every workload of
// a subject shares one ingested log (ingest, then its reads, reopens,
// restarts after kill -9, truncations and deletion), which the runner's
// fresh server per cell does not model.

// Parse reads an engines.json written before the profile's results were
// in the one schema (results/engines.json as committed), to render or
// compare it as one (Result).
func Parse(b []byte) (*Results, error) {
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Result is r in the one result schema.
func (r *Results) Result() *result.Result {
	res := &result.Result{Facts: r.Facts, Workload: *r.Workload()}
	for _, c := range r.Cells {
		for _, s := range c.Reps {
			res.Add(c.Workload, c.Target, result.Rep{Figures: s.Figures(), Error: s.Err})
		}
	}
	c := r.Config
	res.Setup = []string{fmt.Sprintf("sizes: durable append of %d-byte records for %v per figure; a bulk ingest of %d records of %d B in batches of %d; "+
		"sequential reads of %d bytes; catch-up fetches of %d batches of %d records", c.AppendRecordBytes, c.AppendDuration,
		c.Records, c.RecordBytes, c.BatchRecords, scanMaxBytes, fetchBatches, fetchBatchRecords),
		"page-cache eviction: " + r.CacheControl}
	if r.DeviceNote != "" {
		res.Setup = append(res.Setup, "device counters: "+r.DeviceNote)
	}
	if b := r.Background; b != nil {
		res.Setup = append(res.Setup, fmt.Sprintf("background device writes before the run: %d B in %.1f s, counted in every WA figure too", b.WrittenBytes, b.Seconds))
	}
	for _, s := range r.Subjects {
		res.Setup = append(res.Setup, fmt.Sprintf("%s: %s", s.Name, s.Note))
	}
	res.Checks = res.Judge()
	return res
}

//go:embed engines.yaml
var enginesYAML []byte

// Workload is the engines profile as result renders and judges it:
// engines.yaml's cells that r ran (its cell "append" once per number of
// writers), each on the subjects that took part, and its targets on them.
func (r *Results) Workload() *workloads.Workload {
	var w workloads.Workload
	dec := yaml.NewDecoder(bytes.NewReader(enginesYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&w); err != nil {
		panic(fmt.Sprintf("logbench: engines.yaml: %v", err)) // embedded, and tested
	}
	w.Reps = r.Config.Reps
	var cells []workloads.Cell
	for _, c := range w.Cells {
		if c.Name != "append" {
			cells = append(cells, c)
			continue
		}
		for _, n := range r.writers() {
			a := c
			a.Name, a.Title = AppendWorkload(n), fmt.Sprintf("%s, %d writers", c.Title, n)
			if n == 1 {
				a.Title = c.Title + ", 1 writer"
			}
			cells = append(cells, a)
		}
	}
	w.Cells = nil
	for _, c := range cells {
		for _, s := range r.Subjects {
			if r.Cell(s.Name, c.Name) != nil {
				c.Servers = append(c.Servers, s.Name)
				w.Servers = appendNew(w.Servers, s.Name)
			}
		}
		if c.Reps = w.Reps; len(c.Servers) > 0 {
			w.Cells = append(w.Cells, c)
		}
	}
	w.Targets = slices.DeleteFunc(w.Targets, func(t workloads.Target) bool {
		c := w.Cell(t.Cell)
		return c == nil || !slices.Contains(c.Servers, t.Server) || (t.Over != "" && !slices.Contains(c.Servers, t.Over))
	})
	return &w
}

// writers are the numbers of writers of the run's durable appends.
func (r *Results) writers() []int {
	var out []int
	for _, cell := range r.Cells {
		var n int
		if _, err := fmt.Sscanf(cell.Workload, "append-%d", &n); err == nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func appendNew(xs []string, ys ...string) []string {
	for _, y := range ys {
		if !slices.Contains(xs, y) {
			xs = append(xs, y)
		}
	}
	return xs
}
