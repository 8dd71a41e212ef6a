package bench_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/minikafka/minikafka/bench"
)

func TestQuantilesAt(t *testing.T) {
	var xs []float64
	for i := 200; i >= 1; i-- {
		xs = append(xs, float64(i))
	}
	xs = append(xs, math.NaN())
	q := bench.QuantilesOf(xs)
	assert.Equal(t, 200, q.N(), "NaNs are failed samples, left out")
	assert.Equal(t, 100.0, q.At(0.5))
	assert.Equal(t, 198.0, q.At(0.99))
	assert.Equal(t, 1.0, q.At(0.001), "the smallest rank is 1")
	assert.Equal(t, 200.0, q.Max())
	assert.True(t, math.IsNaN(bench.QuantilesOf(nil).At(0.5)))
}

func TestQuantilesInterval(t *testing.T) {
	ten := bench.QuantilesOf([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	lo, hi := ten.Interval(0.5, 0.9)
	assert.Equal(t, []float64{2, 9}, []float64{lo, hi}, "P(x2 < median < x9) = 0.979 for 10 samples, x3..x8 only 0.89")
	three := bench.QuantilesOf([]float64{3, 1, 2})
	lo, hi = three.Interval(0.5, 0.9)
	assert.Equal(t, []float64{1, 3}, []float64{lo, hi}, "too few samples: the whole range")
	var xs []float64
	for i := 1; i <= 200; i++ {
		xs = append(xs, float64(i))
	}
	lo, hi = bench.QuantilesOf(xs).Interval(0.99, 0.9)
	assert.Less(t, lo, 198.0)
	assert.Equal(t, 200.0, hi, "200 samples cannot bound the p99 from above")
}

func TestCheckResolve(t *testing.T) {
	pass := bench.Judge("failover", 0.8, "s", false, 1)
	assert.Equal(t, bench.Pass, pass.Resolve(0.6, 0.9, "the interval").Verdict, "the bound outside the interval")
	u := pass.Resolve(0.7, 1.2, "the 90 % interval of the median")
	assert.Equal(t, bench.Unresolved, u.Verdict)
	assert.Contains(t, u.Note, "the 90 % interval of the median [700 ms–1.2 s]")
	fail := bench.Judge("ratio", 0.45, "×", true, 0.5)
	assert.Equal(t, bench.Unresolved, fail.Resolve(0.4, 0.55, "noise").Verdict, "a failure within the noise too")
	missing := bench.Judge("x", math.NaN(), "s", false, 1)
	assert.Equal(t, bench.Missing, missing.Resolve(0, 2, "noise").Verdict)
}
