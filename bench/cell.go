package bench

import (
	"fmt"
	"math"
)

// Rep is one repetition of a cell, whatever a profile measures in it.
type Rep interface {
	// Failure says which phase failed and why, "" when the repetition
	// finished. A failed repetition may keep the figures of the phases
	// before the failure.
	Failure() string
}

// Cell is one target (an engine, a server) measured under one workload on
// one topology, over its repetitions. A profile whose workload is more
// than a name embeds it beside its own workload type.
type Cell[R Rep] struct {
	Target string `json:"target"`
	// Workload names what the target was asked to do.
	Workload string `json:"workload,omitempty"`
	Reps     []R    `json:"reps"`
}

// Spread is a figure over the repetitions: f reads it from one, NaN where
// that repetition has none (it failed before, or the figure was not
// measured). See SpreadOf. A nil cell has none.
func (c *Cell[R]) Spread(f func(R) float64) Spread {
	var xs []float64
	if c != nil {
		for _, r := range c.Reps {
			xs = append(xs, f(r))
		}
	}
	return SpreadOf(xs)
}

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
