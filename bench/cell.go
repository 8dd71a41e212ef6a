package bench

import (
	"fmt"
	"math"
	"strings"
)

// Topology is what a cell's servers are: how many brokers, how many
// copies of each partition, which faults are injected while it runs. The
// zero value is a single node with no replication and no faults; the
// cluster and replication profiles fill in the rest.
type Topology struct {
	Brokers           int `json:"brokers,omitempty"`
	ReplicationFactor int `json:"replication_factor,omitempty"`
	// Faults name what is done to the cluster during the measurement
	// (e.g. "kill-leader", "partition-follower"), in order.
	Faults []string `json:"faults,omitempty"`
}

// Single reports whether t is one node without replication or faults.
func (t Topology) Single() bool {
	return t.Brokers <= 1 && t.ReplicationFactor <= 1 && len(t.Faults) == 0
}

func (t Topology) String() string {
	if t.Single() {
		return "1 broker"
	}
	s := fmt.Sprintf("%d brokers, replication factor %d", max(1, t.Brokers), max(1, t.ReplicationFactor))
	if len(t.Faults) > 0 {
		s += ", faults: " + strings.Join(t.Faults, ", ")
	}
	return s
}

// Rep is one repetition of a cell, whatever a profile measures in it.
type Rep interface {
	// Failure says which phase failed and why, "" when the repetition
	// finished. A failed repetition may keep the figures of the phases
	// before the failure.
	Failure() string
}

// Figure is a figure of a repetition that f reads: NaN for a failed
// repetition, and for one without the figure (f gives 0 or less).
func Figure[R Rep](f func(R) float64) func(R) float64 {
	return func(r R) float64 {
		if v := f(r); r.Failure() == "" && v > 0 {
			return v
		}
		return math.NaN()
	}
}

// Cell is one target (an engine, a server) measured under one workload on
// one topology, over its repetitions. A profile whose workload is more
// than a name embeds it beside its own workload type.
type Cell[R Rep] struct {
	Target string `json:"target"`
	// Workload names what the target was asked to do.
	Workload string   `json:"workload,omitempty"`
	Topology Topology `json:"topology,omitzero"`
	Reps     []R      `json:"reps"`
}

// Spread is a figure over the repetitions: f reads it from one, NaN where
// that repetition has none (it failed before, or the figure was not
// measured). See SpreadOf.
func (c *Cell[R]) Spread(f func(R) float64) Spread { return SpreadOf(c.values(f)) }

// Quantiles is the figure over the repetitions as order statistics (see
// QuantilesOf); a nil cell has none.
func (c *Cell[R]) Quantiles(f func(R) float64) Quantiles { return QuantilesOf(c.values(f)) }

// values is f of every repetition, in order; none for a nil cell.
func (c *Cell[R]) values(f func(R) float64) []float64 {
	if c == nil {
		return nil
	}
	xs := make([]float64, len(c.Reps))
	for i, r := range c.Reps {
		xs[i] = f(r)
	}
	return xs
}

// FindCell is target's cell under workload in cells, or nil.
func FindCell[R Rep](cells []*Cell[R], target, workload string) *Cell[R] {
	for _, c := range cells {
		if c.Target == target && c.Workload == workload {
			return c
		}
	}
	return nil
}

// AddRep appends rep to target's cell under workload, making the cell
// (on topology) when cells has none yet.
func AddRep[R Rep](cells *[]*Cell[R], target, workload string, topology Topology, rep R) {
	c := FindCell(*cells, target, workload)
	if c == nil {
		c = &Cell[R]{Target: target, Workload: workload, Topology: topology}
		*cells = append(*cells, c)
	}
	c.Reps = append(c.Reps, rep)
}

// Median is the figure's median, NaN when no repetition has it (also for
// a nil cell, so that a ratio to a target that did not run is NaN).
func (c *Cell[R]) Median(f func(R) float64) float64 { return c.Spread(f).Median }

// Errors lists the failed repetitions, each with its number.
func (c *Cell[R]) Errors() []string {
	if c == nil {
		return nil
	}
	var out []string
	for i, r := range c.Reps {
		if f := r.Failure(); f != "" {
			out = append(out, fmt.Sprintf("rep %d: %s", i+1, f))
		}
	}
	return out
}

// Finished counts the repetitions that did not fail.
func (c *Cell[R]) Finished() int {
	if c == nil {
		return 0
	}
	return len(c.Reps) - len(c.Errors())
}

// SpreadText writes a spread as "median [min–max]", just the median when
// there was one value or the range rounds to it, "–" when there is none.
func SpreadText(s Spread, format func(float64) string) string {
	if !s.OK() {
		return "–"
	}
	if s.N == 1 || format(s.Min) == format(s.Max) {
		return format(s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", format(s.Median), format(s.Min), format(s.Max))
}

// Div is a/b, NaN when either is missing or b is 0.
func Div(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}
