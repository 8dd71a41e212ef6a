package bench

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Quantiles are a figure measured many times in one run (a kill, a topic
// created): the samples themselves, sorted, so that any quantile and its
// confidence interval can be read from them.
type Quantiles struct {
	sorted []float64
}

// QuantilesOf sorts xs, leaving out NaNs (samples that failed).
func QuantilesOf(xs []float64) Quantiles {
	vs := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			vs = append(vs, x)
		}
	}
	slices.Sort(vs)
	return Quantiles{sorted: vs}
}

// N is the number of samples.
func (q Quantiles) N() int { return len(q.sorted) }

// At is the q-quantile (0 < p ≤ 1) by the nearest-rank method: the
// smallest sample with at least a share p of the samples at or below it;
// NaN without samples. At(0.5) of an even count is the lower middle one,
// unlike Spread's median, so that every quantile is a measured value.
func (q Quantiles) At(p float64) float64 {
	n := len(q.sorted)
	if n == 0 {
		return math.NaN()
	}
	return q.sorted[rank(p, n)-1]
}

// Max is the largest sample, NaN without samples.
func (q Quantiles) Max() float64 {
	if len(q.sorted) == 0 {
		return math.NaN()
	}
	return q.sorted[len(q.sorted)-1]
}

func rank(p float64, n int) int {
	return min(max(int(math.Ceil(p*float64(n)-1e-9)), 1), n)
}

// Interval is a distribution-free confidence interval of the p-quantile
// of what was sampled: the order statistics [lo, hi] that cover it with
// probability at least conf, from the binomial distribution of how many
// samples fall below it. With too few samples for conf the interval widens
// to the smallest and the largest sample. NaN without samples.
func (q Quantiles) Interval(p, conf float64) (lo, hi float64) {
	n := len(q.sorted)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	tail := (1 - conf) / 2
	below := distuv.Binomial{N: float64(n), P: p} // how many samples fall below the quantile
	l, u := 1, n
	// P(B ≤ k-1) is the chance that the k-th smallest sample lies above
	// the quantile, B ~ Binomial(n, p) counting samples below it.
	for k := n; k >= 1; k-- {
		if below.CDF(float64(k-1)) <= tail {
			l = k
			break
		}
	}
	for k := 1; k <= n; k++ {
		if 1-below.CDF(float64(k-1)) <= tail {
			u = k
			break
		}
	}
	if l > u {
		l, u = u, l
	}
	return q.sorted[l-1], q.sorted[u-1]
}

// Confidence is the level of the intervals Resolve is given by the
// profiles: 90 %.
const Confidence = 0.9

// Resolve marks a passing or failing check Unresolved when its bound lies
// inside [lo, hi], the range the run's own data leaves for the figure (a
// confidence interval of a quantile, or the figure give or take the run's
// noise): the run cannot tell which side of the bound the figure is on.
// what says what the range is, for the note.
func (c Check) Resolve(lo, hi float64, what string) Check {
	if (c.Verdict != Pass && c.Verdict != Fail) || math.IsNaN(lo) || math.IsNaN(hi) || c.Bound < lo || c.Bound > hi {
		return c
	}
	c.Verdict = Unresolved
	note := fmt.Sprintf("the bound lies within %s [%s–%s]", what, FormatUnit(lo, c.Unit), FormatUnit(hi, c.Unit))
	if c.Note != "" {
		note = c.Note + "; " + note
	}
	c.Note = note
	return c
}
