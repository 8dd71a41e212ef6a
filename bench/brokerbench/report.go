package brokerbench

import (
	"encoding/json"
	"fmt"

	"github.com/minikafka/minikafka/bench"
)

// Files the profile writes in its results directory.
const (
	ReportFile  = "broker.md"
	ResultsFile = "broker.json"
)

// Cell finds target's cell under workload, or nil.
func (r *Result) Cell(target, workload string) *Cell {
	for _, c := range r.Cells {
		if c.Target == target && c.Workload == workload {
			return c
		}
	}
	return nil
}

func (r *Result) reference() *Cell {
	for _, c := range r.Cells {
		if c.Reference && c.Workload == Throughput {
			return c
		}
	}
	return nil
}

// median is a cell's median of fig, NaN for a missing cell.
func median(c *Cell, fig func(Rep) float64) float64 {
	if c == nil {
		return bench.SpreadOf(nil).Median
	}
	return c.Median(fig)
}

// ratio is c's median of the figure over the reference's.
func (r *Result) ratio(c *Cell, fig func(Rep) float64) float64 {
	return bench.Div(median(c, fig), median(r.reference(), fig))
}

// Names of the ratios against the reference; the checks use them for
// TargetEngine.
func produceName(engine string) string { return "produce, acks=all, sync=always, " + engine }
func consumeName(engine string) string { return "consume from the start, " + engine }

// Judge evaluates the targets on r.
func (r *Result) Judge() []bench.Check {
	seg := r.Cell(TargetEngine, Throughput)
	ratio := func(name string, fig func(Rep) float64, goal float64) bench.Check {
		c := bench.Judge(name, r.ratio(seg, fig), "×", true, goal)
		if c.Verdict == bench.Missing {
			return c.Because("%s or the reference has no figure", TargetEngine)
		}
		return c.Because("%s vs %s records/s against %s", bench.Rate(median(seg, fig)), bench.Rate(median(r.reference(), fig)),
			r.reference().Target)
	}
	rss := bench.Judge("peak broker RSS, "+TargetEngine, median(r.Cell(TargetEngine, Memory), PeakRSS), "B", false, TargetRSSBytes)
	if m := r.Cell(TargetEngine, Memory); m != nil {
		rss.Name = fmt.Sprintf("peak broker RSS, %s, %d records", TargetEngine, m.Records)
	}
	return []bench.Check{
		ratio(produceName(TargetEngine), ProduceRate, TargetProduceRatio),
		ratio(consumeName(TargetEngine), ConsumeRate, TargetConsumeRatio),
		rss,
	}
}

// Ratios are every engine's produce and consume rates over the
// reference's; the ones the targets are about gate the regression check.
func (r *Result) Ratios() []bench.Ratio {
	var out bench.Ratios
	for _, c := range r.Cells {
		if c.Reference || c.Workload != Throughput {
			continue
		}
		gate := c.Target == TargetEngine
		out.Add(produceName(c.Target), r.ratio(c, ProduceRate), gate)
		out.Add(consumeName(c.Target), r.ratio(c, ConsumeRate), gate)
	}
	return out.Sorted()
}

// Report renders the run as markdown.
func (r *Result) Report() []byte {
	rep := &bench.Report{Title: "Broker benchmark: mini-kafka against franz-go's kfake"}
	s := rep.Section("Targets")
	s.Para("Ratios are medians over the repetitions against the median of kfake, franz-go's in-memory fake cluster (no fsync), measured in the same run.")
	if busy := r.Busy(); busy != "" {
		s.Para("**%s**", busy)
	}
	t := s.Table("target", "measured", "goal", "result").Left(1, 2, 3)
	for _, c := range r.Checks {
		t.Row(c.Name, measured(c), c.Goal(), "**"+c.Verdict+"**")
	}
	r.throughputSection(rep)
	r.memorySection(rep)
	rep.Section("Setup").List(append(r.List(), fmt.Sprintf("repetitions: %d per server, interleaved; figures are median [min–max]", r.Config.Reps))...)
	return rep.Markdown()
}

func measured(c bench.Check) string {
	if c.Note == "" || c.Verdict == bench.Missing {
		return c.Measured()
	}
	return c.Measured() + " (" + c.Note + ")"
}

func (r *Result) throughputSection(rep *bench.Report) {
	s := rep.Section("Throughput")
	s.Para("%d records of %d B to %d partitions, franz-go producer with acks=all and idempotence, closed loop with up to %d records in flight, the servers under sync=%s; then a new client consumes all of them from the start. Each server starts fresh on an empty directory for every repetition.",
		r.Config.Records, r.Config.RecordBytes, r.Config.Partitions, r.Config.InFlight, r.Config.Sync)
	t := s.Table("server", "produce records/s", "× kfake", "consume records/s", "× kfake", "ack p50", "ack p99", "peak RSS", "reps ok")
	var failures []string
	for _, c := range r.Cells {
		if c.Workload != Throughput {
			continue
		}
		t.Row(c.Target, bench.SpreadText(c.Spread(ProduceRate), bench.Rate), bench.Times(r.ratio(c, ProduceRate)),
			bench.SpreadText(c.Spread(ConsumeRate), bench.Rate), bench.Times(r.ratio(c, ConsumeRate)),
			bench.SpreadText(c.Spread(AckP50), bench.Millis), bench.SpreadText(c.Spread(AckP99), bench.Millis),
			bench.SpreadText(c.Spread(PeakRSS), bytesOf), fmt.Sprintf("%d/%d", c.Finished(), len(c.Reps)))
		for _, e := range c.Errors() {
			failures = append(failures, c.Target+" "+e)
		}
	}
	if len(failures) > 0 {
		s.Para("Failed repetitions (their cells count only the repetitions that finished):")
		s.List(failures...)
	}
}

func bytesOf(v float64) string { return bench.Bytes(int64(v)) }

func (r *Result) memorySection(rep *bench.Report) {
	var cells []*Cell
	for _, c := range r.Cells {
		if c.Workload == Memory {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return
	}
	s := rep.Section("Memory")
	s.Para("Each server runs as a child process; its peak resident set (VmHWM from /proc/<pid>/status) is read after its records were produced and consumed, once per server.")
	t := s.Table("server", "records", "peak RSS", "produce records/s", "consume records/s", "error").Left(5)
	for _, c := range cells {
		t.Row(c.Target, fmt.Sprint(c.Records), bench.SpreadText(c.Spread(PeakRSS), bytesOf),
			bench.SpreadText(c.Spread(ProduceRate), bench.Rate), bench.SpreadText(c.Spread(ConsumeRate), bench.Rate),
			firstError(c))
	}
}

func firstError(c *Cell) string {
	for _, r := range c.Reps {
		if r.Error != "" {
			return r.Error
		}
	}
	return ""
}

// Write writes broker.md and broker.json into dir.
func (r *Result) Write(dir string) error {
	return bench.WriteReport(dir, ReportFile, r.Report(), ResultsFile, r)
}

// Load reads a run's broker.json (see Parse).
func Load(path string) (*Result, error) { return bench.Load(path, Parse) }

// Parse reads a broker.json; the checks are judged again, so that a
// change to the targets shows in a rendered report. Files written before
// cells named their workload (by `loadgen bench-broker`) hold the
// throughput cells unnamed and the memory runs apart, under "rss".
func Parse(b []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	var legacy struct {
		RSS []struct {
			Target  string  `json:"target"`
			Records int64   `json:"records"`
			PeakRSS int64   `json:"peak_rss_bytes"`
			Produce float64 `json:"produce_records_per_s"`
			Consume float64 `json:"consume_records_per_s"`
			Error   string  `json:"error"`
		} `json:"rss"`
	}
	if err := json.Unmarshal(b, &legacy); err != nil {
		return nil, err
	}
	for _, c := range r.Cells {
		if c.Workload == "" {
			c.Workload, c.Records = Throughput, r.Config.Records
		}
	}
	for _, m := range legacy.RSS {
		r.Cells = append(r.Cells, &Cell{Cell: bench.Cell[Rep]{Target: m.Target, Workload: Memory,
			Reps: []Rep{{Produce: m.Produce, Consume: m.Consume, PeakRSS: m.PeakRSS, Error: m.Error}}}, Records: m.Records})
	}
	if r.Config.Sync == "" {
		r.Config.Sync = "always"
	}
	r.Checks = r.Judge()
	return &r, nil
}
