package bench

import (
	"math"
	"slices"
)

// Spread is one figure over repetitions: its median, smallest and largest
// value. Reports give the median and show min and max so that a noisy run
// is visible as such.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// SpreadOf summarises xs, ignoring NaNs (a repetition that failed). With no
// value left every field is NaN and N is 0.
func SpreadOf(xs []float64) Spread {
	vs := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			vs = append(vs, x)
		}
	}
	if len(vs) == 0 {
		nan := math.NaN()
		return Spread{Median: nan, Min: nan, Max: nan}
	}
	slices.Sort(vs)
	n := len(vs)
	med := vs[n/2]
	if n%2 == 0 {
		med = (vs[n/2-1] + vs[n/2]) / 2
	}
	return Spread{Median: med, Min: vs[0], Max: vs[n-1], N: n}
}

// OK reports whether the spread holds at least one value.
func (s Spread) OK() bool { return s.N > 0 }
