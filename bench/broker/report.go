package broker

import (
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/minikafka/minikafka/bench"
)

// Verdicts of a target line.
const (
	Pass    = "PASS"
	Fail    = "FAIL"
	Missing = "MISSING"
)

// Check is one of the targets, evaluated on a run.
type Check struct {
	Name     string  `json:"name"`
	Measured string  `json:"measured"`
	Goal     string  `json:"goal"`
	Verdict  string  `json:"verdict"`
	Value    float64 `json:"value"`
}

func (r *Result) cell(name string) *Cell {
	for _, c := range r.Cells {
		if c.Target == name {
			return c
		}
	}
	return nil
}

func (r *Result) reference() *Cell {
	for _, c := range r.Cells {
		if c.Reference {
			return c
		}
	}
	return nil
}

func produceOf(r Rep) float64 { return r.Produce }
func consumeOf(r Rep) float64 { return r.Consume }

// ratio is the median of c's figure over the reference's median, NaN when
// either is missing.
func (r *Result) ratio(c *Cell, figure func(Rep) float64) float64 {
	ref := r.reference()
	if c == nil || ref == nil {
		return math.NaN()
	}
	a, b := c.Spread(figure), ref.Spread(figure)
	if !a.OK() || !b.OK() || b.Median == 0 {
		return math.NaN()
	}
	return a.Median / b.Median
}

// Checks evaluates the targets on r.
func (r *Result) Checks() []Check {
	seg := r.cell(TargetEngine)
	ratioCheck := func(name string, fig func(Rep) float64, goal float64) Check {
		v := r.ratio(seg, fig)
		c := Check{Name: name, Goal: fmt.Sprintf("≥ %.2f× kfake", goal), Value: v}
		if math.IsNaN(v) {
			c.Verdict, c.Measured, c.Value = Missing, "no figure", 0
			return c
		}
		c.Measured = fmt.Sprintf("%s (%s vs %s records/s)", bench.Times(v),
			bench.Rate(seg.Spread(fig).Median), bench.Rate(r.reference().Spread(fig).Median))
		c.Verdict = verdict(v >= goal)
		return c
	}
	checks := []Check{
		ratioCheck("produce, acks=all, sync=always, "+TargetEngine, produceOf, TargetProduceRatio),
		ratioCheck("consume from the start, "+TargetEngine, consumeOf, TargetConsumeRatio),
	}
	rss := Check{Name: "peak broker RSS, " + TargetEngine, Goal: "≤ " + bench.Bytes(TargetRSSBytes), Verdict: Missing, Measured: "no figure"}
	for _, c := range r.RSS {
		if c.Target == TargetEngine && c.Error == "" && c.PeakRSS > 0 {
			rss.Name = fmt.Sprintf("peak broker RSS, %s, %d records", TargetEngine, c.Records)
			rss.Value = float64(c.PeakRSS)
			rss.Measured = bench.Bytes(c.PeakRSS)
			rss.Verdict = verdict(c.PeakRSS <= TargetRSSBytes)
		}
	}
	return append(checks, rss)
}

func verdict(ok bool) string {
	if ok {
		return Pass
	}
	return Fail
}

// Report renders the run as markdown.
func (r *Result) Report() []byte {
	rep := &bench.Report{Title: "Broker benchmark: mini-kafka against franz-go's kfake"}
	s := rep.Section("Targets (issue 3)")
	s.Para("Ratios are medians over the repetitions against the median of kfake, franz-go's in-memory fake cluster (no fsync), measured in the same run.")
	t := s.Table("target", "measured", "goal", "result").Left(1, 2, 3)
	for _, c := range r.Checks() {
		t.Row(c.Name, c.Measured, c.Goal, "**"+c.Verdict+"**")
	}
	r.throughputSection(rep)
	r.memorySection(rep)
	r.setupSection(rep)
	return rep.Markdown()
}

func spreadText(sp bench.Spread, format func(float64) string) (median, minMax string) {
	if !sp.OK() {
		return "–", "–"
	}
	return format(sp.Median), format(sp.Min) + " – " + format(sp.Max)
}

func (r *Result) throughputSection(rep *bench.Report) {
	s := rep.Section("Throughput")
	s.Para("%d records of %d B to %d partitions, franz-go producer with acks=all and idempotence, closed loop with up to %d records in flight; then a new client consumes all of them from the start. Each server starts fresh on an empty directory for every repetition.",
		r.Config.Records, r.Config.RecordBytes, r.Config.Partitions, r.Config.InFlight)
	t := s.Table("server", "produce records/s", "min – max", "× kfake", "consume records/s", "min – max", "× kfake",
		"ack p50", "ack p99", "peak RSS", "reps ok")
	rate := bench.Rate
	for _, c := range r.Cells {
		pm, pr := spreadText(c.Spread(produceOf), rate)
		cm, cr := spreadText(c.Spread(consumeOf), rate)
		p50, _ := spreadText(c.Spread(func(x Rep) float64 { return x.AckP50 }), bench.Millis)
		p99, _ := spreadText(c.Spread(func(x Rep) float64 { return x.AckP99 }), bench.Millis)
		rss, _ := spreadText(c.Spread(func(x Rep) float64 { return float64(x.PeakRSS) }),
			func(v float64) string { return bench.Bytes(int64(v)) })
		ok := len(c.Reps) - len(c.Errors())
		t.Row(c.Target, pm, pr, bench.Times(r.ratio(c, produceOf)), cm, cr, bench.Times(r.ratio(c, consumeOf)),
			p50, p99, rss, fmt.Sprintf("%d/%d", ok, len(c.Reps)))
	}
	var failures []string
	for _, c := range r.Cells {
		for _, e := range c.Errors() {
			failures = append(failures, c.Target+" "+e)
		}
	}
	if len(failures) > 0 {
		s.Para("Failed repetitions (their cells count only the repetitions that finished):")
		s.List(failures...)
	}
}

func (r *Result) memorySection(rep *bench.Report) {
	if len(r.RSS) == 0 {
		return
	}
	s := rep.Section("Memory")
	s.Para("Each server runs as a child process; its peak resident set (VmHWM from /proc/<pid>/status) is read after its records were produced and consumed, once per server.")
	t := s.Table("server", "records", "peak RSS", "produce records/s", "consume records/s", "error").Left(5)
	for _, c := range r.RSS {
		rss := "–"
		if c.PeakRSS > 0 {
			rss = bench.Bytes(c.PeakRSS)
		}
		rate := func(v float64) string {
			if c.Error != "" {
				return "–"
			}
			return bench.Rate(v)
		}
		t.Row(c.Target, fmt.Sprint(c.Records), rss, rate(c.Produce), rate(c.Consume), c.Error)
	}
}

func (r *Result) setupSection(rep *bench.Report) {
	s := rep.Section("Setup")
	m := r.Machine
	items := []string{
		fmt.Sprintf("date: %s; the run took %s", r.Started.UTC().Format(time.RFC3339), time.Duration(r.Duration*float64(time.Second)).Round(100*time.Millisecond)),
		"commit: " + r.Commit,
		"command: `" + r.Command + "`",
		fmt.Sprintf("repetitions: %d per server, interleaved; figures are median with min – max", r.Config.Reps),
		fmt.Sprintf("machine: %d CPUs (%s), %s memory, kernel %s, %s/%s, %s", m.CPUs, m.CPUModel, bench.Bytes(m.MemoryBytes), m.Kernel, m.OS, m.Arch, m.GoVersion),
		fmt.Sprintf("load average at the start: %s", m.LoadAvg),
		fmt.Sprintf("data: %s on %s (%s), device %s %s %s", m.Dir, m.Filesystem, m.MountSource, m.Disk.Device, m.Disk.Vendor, m.Disk.Model),
	}
	items = append(items, r.Setup...)
	s.List(items...)
}

// Write writes broker.md and broker.json into dir.
func (r *Result) Write(dir string) error {
	if err := bench.WriteFile(filepath.Join(dir, "broker.md"), r.Report()); err != nil {
		return err
	}
	return bench.WriteJSON(filepath.Join(dir, "broker.json"), struct {
		*Result
		Checks []Check `json:"checks"`
	}{r, r.Checks()})
}
