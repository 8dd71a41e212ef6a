package report

import (
	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/matrix"
)

// Ratios are a run's comparisons: each engine under the broker against
// kfake (the broker's overhead), segment against the other engines and
// JetStream, and catch-up reads likewise. The engines' ratios against the
// raw disk are the engines profile's, compared in its own report.
//
// The headline ratios gate: those at the reference point (the run's most
// repeated, steadiest cell; JetStream aside, whose own rate swings too much
// between repetitions here).
func Ratios(run *matrix.Run) []bench.Ratio {
	var out bench.Ratios
	gate := false
	for _, p := range run.Points {
		w := p.Workload
		// ratio is a's median of fig over b's at w, NaN when either is missing.
		ratio := func(a, b, fig string) float64 {
			return bench.Div(run.Cell(a, w).Median(fig), run.Cell(b, w).Median(fig))
		}
		add := func(name string, v float64) { out.Add(name+" @ "+w.Key(), v, gate) }
		gate = w == matrix.Reference
		for _, t := range run.Targets {
			if t.Kind != matrix.KindEngine { // the broker over a durable engine
				continue
			}
			e := t.Name
			add("broker/kfake records/s: "+e, ratio(e, "kfake", "records_per_s"))
			if e == "segment" {
				continue
			}
			add("engine/engine records/s: segment/"+e, ratio("segment", e, "records_per_s"))
			if p.Consume {
				add("engine/engine catch-up MB/s: segment/"+e, ratio("segment", e, "catch_up_mb_per_s"))
			}
		}
		// JetStream's own rate swings too much between repetitions here
		// (see the report's ranges) to gate anything.
		gate = false
		add("broker/peer records/s: segment/nats", ratio("segment", "nats", "records_per_s"))
	}
	return out.Sorted()
}
