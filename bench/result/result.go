// Package result is the one schema every workload's run is written in,
// its one judge and its one renderer:
//
//   - the facts of the run (machine, disk, load average, commit, command:
//     bench.Facts), then the workload as it ran, then cells of
//     repetitions: a cell is one of the workload's cells on one server,
//     each repetition a map of named figures (or the reason it failed);
//   - the workload's targets judged from those figures alone (Judge), so
//     that a report rendered again from its JSON judges the targets of the
//     workload it carries;
//   - a markdown report (Markdown): the targets table, then a table per
//     cell with a row per server and a column per figure, then the facts.
//     Nothing but tables and the workload's own text: no prose is made
//     from data.
//
// A figure's name carries its unit (see package workloads), which is all
// the renderer needs to format it.
package result

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/workloads"
)

// Result is one run of a workload.
type Result struct {
	bench.Facts
	Workload workloads.Workload `json:"workload"`
	// Quick marks a smoke run (-quick): not a measurement.
	Quick  bool          `json:"quick,omitempty"`
	Cells  []*Cell       `json:"cells"`
	Checks []bench.Check `json:"checks"`
}

// Cell is one cell of the workload on one server, over its repetitions.
type Cell struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Reps   []Rep  `json:"reps"`
}

// Rep is one repetition: its figures, or the reason it failed (a failed
// repetition keeps the figures of the steps before the failure).
type Rep struct {
	Figures map[string]float64 `json:"figures"`
	Error   string             `json:"error,omitempty"`
}

// Cell is the named cell on server, or nil.
func (r *Result) Cell(name, server string) *Cell {
	for _, c := range r.Cells {
		if c.Name == name && c.Server == server {
			return c
		}
	}
	return nil
}

// Add appends a repetition to its cell, making the cell when it is the
// first.
func (r *Result) Add(name, server string, rep Rep) {
	c := r.Cell(name, server)
	if c == nil {
		c = &Cell{Name: name, Server: server}
		r.Cells = append(r.Cells, c)
	}
	c.Reps = append(c.Reps, rep)
}

// Values is the figure of every repetition that finished and has it; nil
// for a nil cell. A figure "A/B" is A over B in each repetition (see
// Per).
func (c *Cell) Values(figure string) []float64 {
	if c == nil {
		return nil
	}
	a, b, ratio := strings.Cut(figure, "/")
	var xs []float64
	for _, r := range c.Reps {
		v, ok := r.Figures[a]
		if ratio {
			w, okB := r.Figures[b]
			v, ok = bench.Div(v, w), ok && okB
		}
		if ok && r.Error == "" && !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	return xs
}

// Per is the figure name of a over b in each repetition ("A/B"), a alone
// when b is "".
func Per(a, b string) string {
	if b == "" {
		return a
	}
	return a + "/" + b
}

// Spread is the figure over the finished repetitions.
func (c *Cell) Spread(figure string) bench.Spread { return bench.SpreadOf(c.Values(figure)) }

// Stat is a statistic of the figure (see workloads.Target.Stat), NaN
// without values.
func (c *Cell) Stat(figure, stat string) float64 {
	p, _ := workloads.StatQuantile(stat)
	s := c.Spread(figure)
	switch {
	case p == 0.5:
		return s.Median
	case p == 0:
		return s.Min
	case p == 1:
		return s.Max
	}
	return bench.QuantilesOf(c.Values(figure)).At(p)
}

// Finished counts the repetitions that did not fail; Errors lists the
// others.
func (c *Cell) Finished() int { return len(c.Reps) - len(c.Errors()) }

// Errors lists the failed repetitions, each with its number.
func (c *Cell) Errors() []string {
	var out []string
	for i, r := range c.Reps {
		if r.Error != "" {
			out = append(out, fmt.Sprintf("rep %d: %s", i+1, r.Error))
		}
	}
	return out
}

// Unit is how a figure reads, from its name (see bench.Check.Unit); a
// ratio of two figures of one unit is "×".
func Unit(figure string) string {
	if a, b, ok := strings.Cut(figure, "/"); ok {
		if Unit(a) == Unit(b) && Unit(a) != "" {
			return "×"
		}
		return Unit(a)
	}
	switch {
	case strings.HasSuffix(figure, "_per_s"):
		return "/s"
	case strings.HasSuffix(figure, "_s"), strings.HasSuffix(figure, ".s"):
		return "s"
	case strings.HasSuffix(figure, "_bytes"):
		return "B"
	}
	return ""
}

// Format writes v in the figure's unit.
func Format(v float64, figure string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	switch u := Unit(figure); {
	case u == "/s":
		return bench.Rate(v)
	case u == "s" && v > 0 && v < 1e-3:
		return fmt.Sprintf("%.3g µs", v*1e6)
	}
	return bench.FormatUnit(v, Unit(figure))
}

// Judge judges the workload's targets on the cells.
func (r *Result) Judge() []bench.Check {
	checks := make([]bench.Check, 0, len(r.Workload.Targets))
	for _, t := range r.Workload.Targets {
		checks = append(checks, r.judge(t))
	}
	return checks
}

func (r *Result) judge(t workloads.Target) bench.Check {
	name := t.Name + ", " + t.Server
	bound, atLeast := t.Bound()
	c := r.Cell(t.Cell, t.Server)
	t.Figure = Per(t.Figure, t.Per)
	v := c.Stat(t.Figure, t.Stat)
	ref, refName := r.ref(t.Cell, t.Server, t.Over, t.OverCell)
	if refName == "" {
		unit := Unit(t.Figure)
		if unit == "/s" {
			unit = ""
		}
		ch := bench.Judge(name, v, unit, atLeast, bound)
		if ch.Verdict == bench.Missing {
			return ch.Because("no figure: %s", failureOf(c))
		}
		q := bench.QuantilesOf(c.Values(t.Figure))
		if q.N() < 2 {
			return ch
		}
		p, _ := workloads.StatQuantile(t.Stat)
		if p == 0 || p == 1 {
			return ch.Because("%s of %d", statName(t.Stat), q.N())
		}
		lo, hi := q.Interval(p, bench.Confidence)
		ch = ch.Because("%s of %d, 90 %% interval %s–%s, max %s", statName(t.Stat), q.N(),
			Format(lo, t.Figure), Format(hi, t.Figure), Format(q.Max(), t.Figure))
		if lo == hi {
			return ch // every sample the same: nothing to resolve
		}
		return ch.Resolve(lo, hi, "that interval")
	}
	if t.Paired {
		ch := bench.Judge(name, paired(c, ref, t.Figure, t.Stat), "×", atLeast, bound)
		if ch.Verdict == bench.Missing {
			return ch.Because("no figure on both sides")
		}
		return ch.Because("%s of %d paired repetitions against %s", statName(t.Stat), min(len(c.Values(t.Figure)), len(ref.Values(t.Figure))), refName)
	}
	w := ref.Stat(t.Figure, t.Stat)
	ch := bench.Judge(name, bench.Div(v, w), "×", atLeast, bound)
	if ch.Verdict == bench.Missing {
		if math.IsNaN(v) {
			return ch.Because("no figure: %s", failureOf(c))
		}
		return ch.Because("no figure on %s: %s", refName, failureOf(ref))
	}
	ch = ch.Because("%s vs %s against %s", Format(v, t.Figure), Format(w, t.Figure), refName)
	noise := max(relSpread(c.Spread(t.Figure)), relSpread(ref.Spread(t.Figure)))
	if noise == 0 {
		return ch
	}
	ch = ch.Because("%s; the runs of a side differ by up to %.0f %%", ch.Note, noise*100)
	return ch.Resolve(ch.Value*(1-noise), ch.Value*(1+noise), "the ratio give or take that")
}

// paired is stat of a's figure over b's, repetition by repetition (see
// workloads.Target.Paired); NaN without a pair.
func paired(a, b *Cell, figure, stat string) float64 {
	xs, ys := a.Values(figure), b.Values(figure)
	n := min(len(xs), len(ys))
	if n == 0 {
		return math.NaN()
	}
	ratios := &Cell{}
	for i := range n {
		ratios.Reps = append(ratios.Reps, Rep{Figures: map[string]float64{"r": bench.Div(xs[i], ys[i])}})
	}
	return ratios.Stat("r", stat)
}

// ref is the cell a figure of cell on server is divided by, and its name
// for the reader ("" when there is none): over's cell, or overCell's on
// over (or on server).
func (r *Result) ref(cell, server, over, overCell string) (*Cell, string) {
	switch {
	case overCell != "" && over != "":
		return r.Cell(overCell, over), overCell + " on " + over
	case overCell != "":
		return r.Cell(overCell, server), overCell
	case over != "":
		return r.Cell(cell, over), over
	}
	return nil, ""
}

// relSpread is max/min - 1 over at least two values, else 0.
func relSpread(s bench.Spread) float64 {
	if s.N < 2 || s.Min <= 0 {
		return 0
	}
	return s.Max/s.Min - 1
}

func statName(stat string) string {
	if stat == "" {
		return "median"
	}
	return stat
}

func failureOf(c *Cell) string {
	if c == nil {
		return "the cell did not run"
	}
	if errs := c.Errors(); len(errs) > 0 {
		return errs[0]
	}
	return "not measured"
}

// Ratios are what cmd/benchcheck compares between runs: every "over"
// column of every cell for every server but the reference (those a gate
// target names gate), and, reported only, each target without "over" as
// its figure's margin to its bound (higher is better).
func (r *Result) Ratios() []bench.Ratio {
	gates := map[string]bool{}
	var out bench.Ratios
	for _, t := range r.Workload.Targets {
		if _, name := r.ref(t.Cell, t.Server, t.Over, t.OverCell); name != "" {
			gates[ratioName(t.Cell, Per(t.Figure, t.Per), name, t.Server)] = t.Gate
			continue
		}
		v := r.Cell(t.Cell, t.Server).Stat(t.Figure, t.Stat)
		bound, atLeast := t.Bound()
		margin := bench.Div(bound, v)
		if atLeast {
			margin = bench.Div(v, bound)
		}
		out.Add(fmt.Sprintf("%s: %s %s over its bound, %s", t.Cell, t.Figure, statName(t.Stat), t.Server), margin, false)
	}
	for _, wc := range r.Workload.Cells {
		for _, col := range wc.Columns {
			fig := Per(col.Figure, col.Per)
			for _, s := range wc.Servers {
				ref, name := r.ref(wc.Name, s, col.Over, col.OverCell)
				if name == "" || s == col.Over && col.OverCell == "" {
					continue
				}
				n := ratioName(wc.Name, fig, name, s)
				out.Add(n, bench.Div(r.Cell(wc.Name, s).Stat(fig, ""), ref.Stat(fig, "")), gates[n])
			}
		}
	}
	return out.Sorted()
}

func ratioName(cell, figure, over, server string) string {
	return fmt.Sprintf("%s: %s over %s, %s", cell, figure, over, server)
}

// Read reads a results file and judges its workload's targets again, so
// that a changed target shows in a report rendered from old figures.
func Read(path string) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Parse decodes a results file and judges it again (see Read).
func Parse(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	if r.Workload.Name == "" || r.Cells == nil {
		return nil, fmt.Errorf("not a workload's results (an older format: regenerate it with go run ./cmd/bench)")
	}
	r.Checks = r.Judge()
	return &r, nil
}
