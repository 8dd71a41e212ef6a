package report

import (
	"fmt"

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
	add := func(name string, v float64) { out.Add(name, v, gate) }
	v := &view{run: run}
	for _, p := range run.Points {
		w := p.Workload
		gate = w == matrix.Reference
		for _, e := range v.engines() {
			add(fmt.Sprintf("broker/kfake records/s: %s @ %s", e, w.Key()),
				div(v.med(e, w, "records_per_s"), v.med("kfake", w, "records_per_s")))
			if e == "segment" {
				continue
			}
			add(fmt.Sprintf("engine/engine records/s: segment/%s @ %s", e, w.Key()),
				div(v.med("segment", w, "records_per_s"), v.med(e, w, "records_per_s")))
			if p.Consume {
				add(fmt.Sprintf("engine/engine catch-up MB/s: segment/%s @ %s", e, w.Key()),
					div(v.med("segment", w, "catch_up_mb_per_s"), v.med(e, w, "catch_up_mb_per_s")))
			}
		}
		// JetStream's own rate swings too much between repetitions here
		// (see the report's ranges) to gate anything.
		gate = false
		add(fmt.Sprintf("broker/peer records/s: segment/nats @ %s", w.Key()),
			div(v.med("segment", w, "records_per_s"), v.med("nats", w, "records_per_s")))
	}
	return out.Sorted()
}
