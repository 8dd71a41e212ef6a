package bench

import (
	"math"
	"sort"
)

// Ratio is one dimensionless comparison inside a run: higher is better
// for mini-kafka. Ratios, not absolute rates, are what compare across
// runs: both sides of a ratio saw the same machine at the same time.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Gate marks the headline ratios whose drop fails the regression
	// check (cmd/benchcheck); the others are reported only, since cells of
	// a few seconds on a shared machine move by more than the tolerance
	// on their own.
	Gate bool `json:"gate"`
}

// Ratios collects ratios, leaving out the ones that are not figures
// (NaN, infinite, not positive).
type Ratios []Ratio

// Add appends a ratio when v is one.
func (rs *Ratios) Add(name string, v float64, gate bool) {
	if !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 {
		*rs = append(*rs, Ratio{Name: name, Value: v, Gate: gate})
	}
}

// Sorted returns the ratios by name.
func (rs Ratios) Sorted() []Ratio {
	out := append([]Ratio(nil), rs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Verdicts of the regression check.
const (
	StatusOK      = "ok"
	StatusDrop    = "DROP"
	StatusDropped = "drop" // a drop beyond the tolerance on a ratio that does not gate
	StatusMissing = "missing"
	StatusNew     = "new"
)

// Change is one ratio compared between a base run and a new one.
type Change struct {
	Name   string
	Base   float64 // NaN when the base lacks it
	New    float64 // NaN when the new run lacks it
	Status string
}

// Delta is the relative change new/base - 1 (NaN when either is absent).
func (c Change) Delta() float64 {
	if math.IsNaN(c.Base) || math.IsNaN(c.New) || c.Base == 0 {
		return math.NaN()
	}
	return c.New/c.Base - 1
}

// Compare matches the ratios by name. A gating ratio (all of them with
// all) that fell by more than tolerance (0.15 for 15 %) is a DROP and
// counts in drops; another such fall is a drop, reported only; a ratio the
// new run lacks is missing; one only the new run has is new.
func Compare(base, next []Ratio, tolerance float64, all bool) (changes []Change, drops int) {
	b := map[string]float64{}
	for _, r := range base {
		b[r.Name] = r.Value
	}
	seen := map[string]bool{}
	for _, r := range next {
		seen[r.Name] = true
		c := Change{Name: r.Name, New: r.Value, Base: math.NaN(), Status: StatusNew}
		if bv, ok := b[r.Name]; ok {
			c.Base, c.Status = bv, StatusOK
			switch {
			case r.Value >= bv*(1-tolerance):
			case r.Gate || all:
				c.Status = StatusDrop
				drops++
			default:
				c.Status = StatusDropped
			}
		}
		changes = append(changes, c)
	}
	for _, r := range base {
		if !seen[r.Name] {
			changes = append(changes, Change{Name: r.Name, Base: r.Value, New: math.NaN(), Status: StatusMissing})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Name < changes[j].Name })
	return changes, drops
}
