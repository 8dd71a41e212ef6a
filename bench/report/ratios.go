package report

import (
	"fmt"
	"math"
	"sort"

	"github.com/minikafka/minikafka/bench/matrix"
)

// Ratio is one dimensionless comparison inside a run: higher is better
// for mini-kafka. Ratios, not absolute rates, are what can be compared
// across runs: both sides of a ratio saw the same machine at the same
// time.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Gate marks the headline ratios whose drop fails the regression
	// check: those at the reference point (the run's most repeated,
	// steadiest cell; JetStream aside) and the engine benchmark's against
	// the raw disk.
	// The others are reported; with a few seconds per cell on a shared
	// machine, gating on all of them would cry wolf.
	Gate bool `json:"gate"`
}

// Ratios are a run's comparisons: each engine under the broker against
// kfake (the broker's overhead), segment against the other engines and
// JetStream, catch-up reads likewise, and the engine benchmark's ratios
// against the raw-disk loop when the run recorded them.
func Ratios(run *matrix.Run) []Ratio {
	var out []Ratio
	gate := false
	add := func(name string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 {
			out = append(out, Ratio{Name: name, Value: v, Gate: gate})
		}
	}
	v := &view{run: run}
	for _, p := range run.Points {
		w := p.Workload
		gate = w == matrix.Reference
		for _, e := range v.engines() {
			add(fmt.Sprintf("broker/kfake records/s: %s @ %s", e, w.Key()),
				div(v.med(e, w, matrix.RecordsPerSec), v.med("kfake", w, matrix.RecordsPerSec)))
			if e == "segment" {
				continue
			}
			add(fmt.Sprintf("engine/engine records/s: segment/%s @ %s", e, w.Key()),
				div(v.med("segment", w, matrix.RecordsPerSec), v.med(e, w, matrix.RecordsPerSec)))
			if p.Consume {
				add(fmt.Sprintf("engine/engine catch-up MB/s: segment/%s @ %s", e, w.Key()),
					div(v.med("segment", w, matrix.CatchUpMBPerSec), v.med(e, w, matrix.CatchUpMBPerSec)))
			}
		}
		// JetStream's own rate swings too much between repetitions here
		// (see the report's ranges) to gate anything.
		gate = false
		add(fmt.Sprintf("broker/peer records/s: segment/nats @ %s", w.Key()),
			div(v.med("segment", w, matrix.RecordsPerSec), v.med("nats", w, matrix.RecordsPerSec)))
	}
	gate = true
	if ref := run.EnginesRef; ref != nil {
		for _, c := range ref.Checks {
			add("enginebench: "+c.Name, c.Value)
		}
	}
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
