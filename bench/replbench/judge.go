package replbench

import (
	"fmt"
	"math"
	"slices"

	"github.com/minikafka/minikafka/bench"
)

// spreadOf is the relative spread (max/min - 1) of a cell's figure, 0
// with fewer than two values.
func spreadOf(c *Cell, fig func(Rep) float64) float64 {
	s := c.Spread(fig)
	if s.N < 2 {
		return 0
	}
	return s.Max/s.Min - 1
}

// ThroughputRatio is the engine's median RF 3 produce rate over its
// median RF 1 rate.
func (r *Result) ThroughputRatio(engine string) float64 {
	return bench.Div(r.Cell(engine, ProduceRF3).Median(RecordsPerSec), r.Cell(engine, ProduceRF1).Median(RecordsPerSec))
}

// segmentName is the engine the others' flushes are measured against.
const segmentName = "segment"

// CPURatio is the engine's median broker CPU per record at RF 3 (every
// broker's) over its median at RF 1.
func (r *Result) CPURatio(engine string) float64 {
	return bench.Div(r.Cell(engine, ProduceRF3).Median(CPUPerRecord), r.Cell(engine, ProduceRF1).Median(CPUPerRecord))
}

// FlushRatio is the engine's median device flushes per acknowledged batch
// at RF 3 over segment's in the same run.
func (r *Result) FlushRatio(engine string) float64 {
	return bench.Div(r.Cell(engine, ProduceRF3).Median(FlushesPerBatch), r.Cell(segmentName, ProduceRF3).Median(FlushesPerBatch))
}

// CatchUpRatio is the engine's catch-up rate over its median bulk-ingest
// rate, both in bytes per second.
func (r *Result) CatchUpRatio(engine string) float64 {
	return bench.Div(r.Cell(engine, CatchUp).Median(CatchUpRate), r.Cell(engine, Ingest).Median(BytesPerSec))
}

func (r *Result) audit(engine string) (Rep, bool) {
	c := r.Cell(engine, Audit)
	if c == nil || len(c.Reps) == 0 || c.Reps[0].Error != "" {
		return Rep{}, false
	}
	return c.Reps[0], true
}

func count(v int, ok bool) float64 {
	if !ok {
		return math.NaN()
	}
	return float64(v)
}

// Judge evaluates the targets on every engine of the run.
func (r *Result) Judge() []bench.Check {
	var out []bench.Check
	for _, e := range r.Config.Engines {
		out = append(out, r.throughputCheck(e), r.cpuCheck(e))
		if e != segmentName && slices.Contains(r.Config.Engines, segmentName) {
			out = append(out, r.flushCheck(e))
		}
		out = append(out, r.latencyCheck(e))
		out = append(out, r.killChecks(e)...)
		a, ok := r.audit(e)
		lost := bench.Judge("acknowledged records lost through the kills and stops, "+e, count(a.Lost, ok), "", false, 0)
		dup := bench.Judge("acknowledged records stored more than once, "+e, count(a.Duplicated, ok), "", false, 0)
		if ok {
			lost = lost.Because("%d acknowledged, %d consumed", a.Acked, a.Consumed)
			dup = dup.Because("%d misplaced (once, at another offset)", a.Misplaced)
		}
		out = append(out, lost, dup, r.stallCheck(e), r.catchUpCheck(e))
	}
	return out
}

// ratioCheck judges num's median figure over den's, a check named name
// against bound (a floor when higher is better), say formatting the two
// medians; it is unresolved when the bound lies within the ratio give or
// take the larger spread of the two sides' runs.
func ratioCheck(name string, num, den *Cell, fig func(Rep) float64, higher bool, bound float64, missing string, say func(float64) string) bench.Check {
	v := bench.Div(num.Median(fig), den.Median(fig))
	c := bench.Judge(name, v, "×", higher, bound)
	if c.Verdict == bench.Missing {
		return c.Because("%s", missing)
	}
	noise := max(spreadOf(num, fig), spreadOf(den, fig))
	c = c.Because("%s vs %s; the runs of a side differ by up to %.0f %%", say(num.Median(fig)), say(den.Median(fig)), noise*100)
	return c.Resolve(v*(1-noise), v*(1+noise), "the ratio give or take that")
}

func (r *Result) throughputCheck(e string) bench.Check {
	return ratioCheck(fmt.Sprintf("produce at RF 3 (acks=all, min.insync.replicas %d) / at RF 1 on one broker, %s", MinISR, e),
		r.Cell(e, ProduceRF3), r.Cell(e, ProduceRF1), RecordsPerSec, true, TargetThroughputRatio, "a side has no finished run",
		func(v float64) string { return bench.Rate(v) + " records/s" })
}

func (r *Result) cpuCheck(e string) bench.Check {
	return ratioCheck("broker CPU per record at RF 3 (every broker) / at RF 1, "+e, r.Cell(e, ProduceRF3), r.Cell(e, ProduceRF1),
		CPUPerRecord, false, TargetCPURatio, "a side has no counted run", micros)
}

func (r *Result) flushCheck(e string) bench.Check {
	return ratioCheck("device flushes per acknowledged batch at RF 3 / segment's, "+e, r.Cell(e, ProduceRF3), r.Cell(segmentName, ProduceRF3),
		FlushesPerBatch, false, TargetFlushRatio, "a side has no counted run", flushes)
}

func (r *Result) latencyCheck(e string) bench.Check {
	c := r.Cell(e, LatencyRF3)
	rate := c.Median(func(x Rep) float64 {
		if x.Error != "" {
			return math.NaN()
		}
		return x.Rate
	})
	ch := bench.Judge("acks=all p99 at half the RF 3 peak rate (open loop), "+e, c.Median(P99), "s", false, TargetHalfRateP99.Seconds())
	if ch.Verdict == bench.Missing {
		return ch.Because("no finished run")
	}
	return ch.Because("at %s records/s; p50 %s, p99.9 %s", bench.Rate(rate), bench.Millis(c.Median(P50)), bench.Millis(c.Median(P999)))
}

func (r *Result) killChecks(e string) []bench.Check {
	c := r.Cell(e, KillLeader)
	s := c.Spread(Seconds)
	med := bench.Judge("kill -9 of a partition's leader under load to the first acknowledgement from the new leader, median, "+e,
		s.Median, "s", false, TargetFailoverMedian.Seconds())
	worst := bench.Judge("kill -9 of a partition's leader under load to the first acknowledgement from the new leader, max, "+e,
		s.Max, "s", false, TargetFailoverMax.Seconds())
	if med.Verdict == bench.Missing {
		return []bench.Check{med.Because("no kill finished"), worst.Because("no kill finished")}
	}
	med = med.Because("%d kills, %d of the killed leaders the active controller", s.N, controllers(c))
	lo, hi := c.Quantiles(Seconds).Interval(0.5, bench.Confidence)
	med = med.Resolve(lo, hi, fmt.Sprintf("the %.0f %% interval of the median", bench.Confidence*100))
	return []bench.Check{med, worst.Because("%d kills", s.N)}
}

// controllers counts the finished rounds whose broker was the active
// controller.
func controllers(c *Cell) int {
	n := 0
	if c == nil {
		return 0
	}
	for _, r := range c.Reps {
		if r.Error == "" && r.Controller {
			n++
		}
	}
	return n
}

func (r *Result) stallCheck(e string) bench.Check {
	c := r.Cell(e, StopLeader)
	s := c.Spread(Seconds)
	ch := bench.Judge("SIGTERM of a partition's leader under load: longest gap between two acknowledgements of a partition, median, "+e,
		s.Median, "s", false, TargetStall.Seconds())
	if ch.Verdict == bench.Missing {
		return ch.Because("no stop finished")
	}
	ch = ch.Because("%d stops, max %s; %s without a fault", s.N, bench.Millis(s.Max), bench.Millis(c.Median(Quiet)))
	lo, hi := c.Quantiles(Seconds).Interval(0.5, bench.Confidence)
	return ch.Resolve(lo, hi, fmt.Sprintf("the %.0f %% interval of the median", bench.Confidence*100))
}

func (r *Result) catchUpCheck(e string) bench.Check {
	v := r.CatchUpRatio(e)
	c := bench.Judge("a follower behind by the backlog back in every ISR: its rate / the engine's bulk ingest, "+e, v, "×", true, TargetCatchUpRatio)
	if c.Verdict == bench.Missing {
		return c.Because("the catch-up or the ingest has no figure")
	}
	up, in := r.Cell(e, CatchUp), r.Cell(e, Ingest)
	noise := spreadOf(in, BytesPerSec)
	c = c.Because("%s MB/s vs %s MB/s; the ingests differ by up to %.0f %%", bench.MB(up.Median(CatchUpRate)), bench.MB(in.Median(BytesPerSec)), noise*100)
	return c.Resolve(v*(1-noise), v*(1+noise), "the ratio give or take that")
}

// Ratios are each engine's RF 3 / RF 1 produce ratio (segment's gates the
// regression check) and catch-up / ingest ratio, and, reported only, each
// time target over the figure it bounds (higher is better).
func (r *Result) Ratios() []bench.Ratio {
	var out bench.Ratios
	for _, e := range r.Config.Engines {
		out.Add("produce RF 3 / RF 1, "+e, r.ThroughputRatio(e), e == segmentName)
		out.Add("catch-up / bulk ingest, "+e, r.CatchUpRatio(e), false)
		out.Add("CPU per record target / RF 3 over RF 1, "+e, bench.Div(TargetCPURatio, r.CPURatio(e)), false)
		out.Add("half-rate p99 target / p99, "+e, bench.Div(TargetHalfRateP99.Seconds(), r.Cell(e, LatencyRF3).Median(P99)), false)
		out.Add("leader failover target / median, "+e, bench.Div(TargetFailoverMedian.Seconds(), r.Cell(e, KillLeader).Median(Seconds)), false)
		out.Add("controlled shutdown stall target / median, "+e, bench.Div(TargetStall.Seconds(), r.Cell(e, StopLeader).Median(Seconds)), false)
	}
	return out.Sorted()
}
