package clusterbench

import (
	"fmt"
	"math"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/brokerbench"
)

// medianCheck judges the median of a cell's figure, unresolved when the
// bound lies in the median's confidence interval.
func medianCheck(name string, c *Cell, bound float64) bench.Check {
	s := c.Spread(Seconds)
	ch := bench.Judge(name, s.Median, "s", false, bound)
	if ch.Verdict == bench.Missing {
		return ch.Because("no measurement finished")
	}
	ch = ch.Because("median of %d, max %s", s.N, bench.Millis(s.Max))
	lo, hi := c.Quantiles(Seconds).Interval(0.5, bench.Confidence)
	return ch.Resolve(lo, hi, fmt.Sprintf("the %.0f %% interval of the median", bench.Confidence*100))
}

// Judge evaluates the targets on r: per engine, then the single-node
// broker.
func (r *Result) Judge() []bench.Check {
	var out []bench.Check
	for _, e := range r.Config.Engines {
		out = append(out,
			medianCheck("controller failover: kill -9 of the active controller to CreateTopics accepted, "+e,
				r.Cell(e, ControllerFailover), TargetControllerFailover.Seconds()),
			medianCheck("broker failure: kill -9 of a broker to unlisted with its leaderships moved, "+e,
				r.Cell(e, BrokerFailure), TargetBrokerFailure.Seconds()),
			r.creationCheck(e))
	}
	for _, e := range r.Config.ScaleEngines {
		out = append(out, medianCheck(fmt.Sprintf("restart at scale (%d topics x %d partitions, RF %d): exec to serving, %s",
			r.Config.ScaleTopics, r.Config.ScalePartitions, r.Config.ScaleRF, e), r.Cell(e, RestartAtScale), TargetRestart.Seconds()))
	}
	if r.Single != nil || r.SingleError != "" {
		out = append(out, r.singleCheck())
	}
	return out
}

func (r *Result) creationCheck(engine string) bench.Check {
	c := r.Cell(engine, TopicCreation)
	q := c.Quantiles(Seconds)
	ch := bench.Judge("topic creation to served by every replica (acks=all produce to each partition), p99, "+engine,
		q.At(0.99), "s", false, TargetTopicCreation.Seconds())
	if ch.Verdict == bench.Missing {
		return ch.Because("no topic finished")
	}
	ch = ch.Because("%d topics, p50 %s, max %s", q.N(), bench.Millis(q.At(0.5)), bench.Millis(q.Max()))
	lo, hi := q.Interval(0.99, bench.Confidence)
	return ch.Resolve(lo, hi, fmt.Sprintf("the %.0f %% interval of the p99", bench.Confidence*100))
}

// singleName prefixes the single-node broker's ratios in this report.
const singleName = "single-node: "

// SingleKept compares the single-node run's gating ratios with the
// base's: each ratio's value over its base value, by ratio name.
func (r *Result) SingleKept() map[string]float64 {
	out := map[string]float64{}
	if r.Single == nil || r.Base == nil {
		return out
	}
	base := map[string]float64{}
	for _, b := range r.Base.Ratios {
		base[b.Name] = b.Value
	}
	for _, n := range r.Single.Ratios() {
		if b, ok := base[n.Name]; ok && n.Gate {
			out[n.Name] = bench.Div(n.Value, b)
		}
	}
	return out
}

// singleNoise is the larger relative spread of kfake's produce rate over
// the repetitions, in the base run and in this one: how far a ratio
// against kfake moves on its own.
func (r *Result) singleNoise() float64 {
	noise := 0.0
	if r.Base != nil {
		noise = r.Base.KfakeSpread
	}
	return max(noise, KfakeSpread(r.Single))
}

// KfakeSpread is the relative spread (max/min - 1) of kfake's produce
// rate over a broker run's repetitions, 0 without two of them.
func KfakeSpread(b *brokerbench.Result) float64 {
	if b == nil {
		return 0
	}
	for _, c := range b.Cells {
		if c.Reference && c.Workload == brokerbench.Throughput {
			if s := c.Spread(brokerbench.ProduceRate); s.N >= 2 {
				return s.Max/s.Min - 1
			}
		}
	}
	return 0
}

func (r *Result) singleCheck() bench.Check {
	name := "single-node broker: its ratios against kfake, the least kept of the base run's"
	if r.Base != nil {
		name = fmt.Sprintf("single-node broker: its ratios against kfake, the least kept of %s's (commit %.12s)", r.Base.Path, r.Base.Commit)
	}
	worst, which := math.NaN(), ""
	for n, kept := range r.SingleKept() {
		if math.IsNaN(worst) || kept < worst {
			worst, which = kept, n
		}
	}
	ch := bench.Judge(name, worst, "×", true, TargetSingleNode)
	switch {
	case r.SingleError != "" && r.Single == nil:
		return ch.Because("the run failed: %s", r.SingleError)
	case r.Base == nil:
		return ch.Because("no base run to compare with")
	case ch.Verdict == bench.Missing:
		return ch.Because("no gating ratio in both runs")
	}
	noise := r.singleNoise()
	ch = ch.Because("%s; kfake's produce rate varies by %.0f %% over the repetitions", which, noise*100)
	return ch.Resolve(worst*(1-noise), worst*(1+noise), "the figure give or take that")
}

// Ratios are the single-node broker's ratios against kfake (the ones its
// own profile gates gate here too) and, reported only, each target over
// the figure it bounds, per engine (higher is better): their noise on a
// shared machine is larger than the regression check's tolerance.
func (r *Result) Ratios() []bench.Ratio {
	var out bench.Ratios
	if r.Single != nil {
		for _, s := range r.Single.Ratios() {
			out.Add(singleName+s.Name, s.Value, s.Gate)
		}
	}
	for _, e := range r.Config.Engines {
		out.Add("controller failover target / median, "+e, bench.Div(TargetControllerFailover.Seconds(), r.Cell(e, ControllerFailover).Median(Seconds)), false)
		out.Add("broker failure target / median, "+e, bench.Div(TargetBrokerFailure.Seconds(), r.Cell(e, BrokerFailure).Median(Seconds)), false)
		out.Add("topic creation target / p99, "+e, bench.Div(TargetTopicCreation.Seconds(), (r.Cell(e, TopicCreation)).Quantiles(Seconds).At(0.99)), false)
	}
	for _, e := range r.Config.ScaleEngines {
		out.Add("restart at scale target / median, "+e, bench.Div(TargetRestart.Seconds(), r.Cell(e, RestartAtScale).Median(Seconds)), false)
	}
	return out.Sorted()
}

// BaseOf makes the base of the comparison from a broker run read from
// path.
func BaseOf(path string, b *brokerbench.Result) *Base {
	return &Base{Path: path, Commit: b.Commit, Ratios: b.Ratios(), KfakeSpread: KfakeSpread(b)}
}
