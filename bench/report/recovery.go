package report

import (
	"fmt"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/matrix"
)

func (v *view) recovery(rep *bench.Report) {
	if len(v.run.Recoveries) == 0 {
		return
	}
	s := rep.Section("Recovery after kill -9")
	s.Para("The broker end to end: a fresh broker filled with 16 KiB records (256 in flight, acks=all), killed with SIGKILL while the producer still sends once the recovery data is acknowledged, restarted on the same directory; lost counts acknowledged records missing after the restart (per partition, acknowledged offsets past the recovered end), and the restart is timed from exec to the first record fetched; one run per engine and policy, so these figures have no range. The peers are not part of this table. The engines' own conformance and crash suites (engine/enginetest, engine/crashtest) run in CI.")
	t := s.Table("engine", "kill -9, sync=always: lost / acked", "kill -9, sync=interval: lost / acked",
		"recovery data", "restart to first fetch (warm)", "(cold cache)")
	for _, info := range v.run.Targets {
		if info.Kind == matrix.KindPeer {
			continue
		}
		n := info.Name
		always, interval := v.run.Recovery(n, "always"), v.run.Recovery(n, "interval")
		data, warm, cold := "–", "–", "–"
		if always != nil && always.Error == "" {
			data, warm, cold = bench.Bytes(always.Bytes), millis(always.Warm), millis(always.Cold)
		}
		t.Row(n, lostText(always, info), lostText(interval, info), data, warm, cold)
	}
	s.Para("sync=always: a produce is acknowledged after an fsync that covers it, so neither a process crash nor a power loss may lose it. sync=interval: acknowledged before the fsync, which comes every %s; the engine contract allows a crash to take up to about one interval. The memory engine keeps nothing across a restart by design.", v.interval())
	s.Para("Warm is right after the kill, with the page cache as the kernel left it; cold is after a second kill -9 with the data's page cache evicted, so recovery reads come from the device.")
}

func lostText(r *matrix.Recovery, info matrix.TargetInfo) string {
	switch {
	case !info.Durable:
		return "not durable"
	case r == nil:
		return "–"
	case r.Error != "":
		return "missing"
	}
	return fmt.Sprintf("%d / %d", r.Lost, r.Records)
}

func (v *view) enginesRef(rep *bench.Report) {
	ref := v.run.EnginesRef
	if ref == nil || len(ref.Checks) == 0 {
		return
	}
	s := rep.Section("Against the raw disk (engine benchmark)")
	s.Para("The engines profile (`cmd/bench -profile engines`) measures the engines without the broker, against a plain append-and-fdatasync loop on the same disk. Its ratios as %s held them when this run started (run of %s, commit %s); the regression check compares them between runs.", ref.Source, ref.Date, ref.Commit)
	t := s.Table("check", "value").Left(0)
	for _, c := range ref.Checks {
		t.Row(c.Name, fmt.Sprintf("%.2f%s", c.Value, c.Unit))
	}
}

func (v *view) setup(rep *bench.Report) {
	r := v.run
	p := r.Profile
	items := append([]string{fmt.Sprintf("profile %s: %d repetition(s) per cell, warm-up %v, measured phase %v, at most %s per phase, %d partitions",
		p.Name, p.Reps, p.WarmUp, p.Duration, bench.Bytes(p.MaxPhaseBytes), p.Partitions)}, r.List()...)
	rep.Section("Setup").List(items...)
}
