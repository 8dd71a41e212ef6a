package clusterbench

import (
	"fmt"

	"github.com/minikafka/minikafka/bench"
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

// Judge evaluates the targets on r, per engine.
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

// Ratios are, reported only, each target over the figure it bounds, per
// engine (higher is better): their noise on a shared machine is larger
// than the regression check's tolerance.
func (r *Result) Ratios() []bench.Ratio {
	var out bench.Ratios
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
