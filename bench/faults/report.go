package faults

import (
	"fmt"
	"math"
	"strings"

	"github.com/minikafka/minikafka/bench"
)

// Files the profile writes in its results directory.
const (
	ReportFile  = "faults.md"
	ResultsFile = "faults.json"
)

// The targets.
const (
	TargetKillFirstAckMedian = 1.0 // seconds, kill -9 of a leader to the first acknowledgement by another broker
)

// Cell is one engine and one fault.
type Cell struct {
	Engine string  `json:"engine"`
	Fault  string  `json:"fault"`
	Rounds []Round `json:"rounds"`
	// AckedFranz and AckedKcat count the records each producer was told
	// were acknowledged; Unacked those it was not (still in flight when
	// the load stopped, or failed); Consumed the records read back.
	AckedFranz int       `json:"acked_franz"`
	AckedKcat  int       `json:"acked_kcat"`
	Unacked    int64     `json:"unacked"`
	Consumed   int64     `json:"consumed"`
	Anomalies  Anomalies `json:"anomalies"`
	Error      string    `json:"error,omitempty"`
}

// Acked is every acknowledged record of the cell.
func (c Cell) Acked() int { return c.AckedFranz + c.AckedKcat }

// Spread is one of the rounds' figures over the rounds that have it.
func (c Cell) Spread(f func(Round) float64) bench.Spread {
	var xs []float64
	for _, r := range c.Rounds {
		if v := f(r); r.Error == "" && v >= 0 {
			xs = append(xs, v)
		} else if r.Error == "" {
			xs = append(xs, math.Inf(1)) // never within the bound
		}
	}
	return bench.SpreadOf(xs)
}

func (c Cell) say() string {
	if c.Error != "" {
		return fmt.Sprintf("%s %s: FAILED: %s", c.Engine, c.Fault, c.Error)
	}
	return fmt.Sprintf("%s %s: %d acknowledged (%d franz-go, %d kcat), %d consumed, %d lost, %d duplicated, %d anomalies in all",
		c.Engine, c.Fault, c.Acked(), c.AckedFranz, c.AckedKcat, c.Consumed, c.Anomalies.Counts[LostWrite], c.Anomalies.Counts[Duplicate], c.Anomalies.Total())
}

// Settings are the run's configuration as the report states it.
type Settings struct {
	Engines        []string `json:"engines"`
	Faults         []string `json:"faults"`
	Rounds         int      `json:"rounds"`
	Rate           float64  `json:"rate"`
	RecordBytes    int      `json:"record_bytes"`
	KcatBatch      int      `json:"kcat_batch"`
	Kcat           bool     `json:"kcat"`
	Sync           string   `json:"sync"`
	SessionTimeout float64  `json:"session_timeout_s"`
	ProgressBound  float64  `json:"progress_bound_s"`
	DiskBytes      int64    `json:"disk_bytes"`
}

func summary(c Config) Settings {
	return Settings{Engines: c.Engines, Faults: c.Faults, Rounds: c.Rounds, Rate: c.Rate, RecordBytes: c.RecordBytes,
		KcatBatch: c.KcatBatch, Kcat: c.Kcat != "" && c.KcatBatch > 0, Sync: c.Sync,
		SessionTimeout: c.SessionTimeout.Seconds(), ProgressBound: c.ProgressBound.Seconds(), DiskBytes: c.DiskBytes}
}

// Result is a run of the matrix.
type Result struct {
	bench.Facts
	Config Settings      `json:"config"`
	Cells  []Cell        `json:"cells"`
	Checks []bench.Check `json:"checks"`
}

// Passed reports whether every cell ran and every check passed.
func (r *Result) Passed() bool {
	for _, c := range r.Cells {
		if c.Error != "" {
			return false
		}
	}
	for _, c := range r.Checks {
		if c.Verdict != bench.Pass {
			return false
		}
	}
	return len(r.Cells) > 0
}

func (r *Result) judge() { r.Checks = r.Judge() }

// Judge checks the targets on the cells.
func (r *Result) Judge() []bench.Check {
	total := func(name string, only string) (float64, int) {
		n, cells := 0, 0
		for _, c := range r.Cells {
			if c.Error == "" && (only == "" || c.Fault == only) {
				n += c.Anomalies.Counts[name]
				cells++
			}
		}
		if cells == 0 {
			return math.NaN(), 0
		}
		return float64(n), cells
	}
	var checks []bench.Check
	for _, name := range AnomalyNames {
		v, cells := total(name, "")
		checks = append(checks, bench.Judge("every cell: "+name, v, "", false, 0).Because("over %d cells", cells))
	}
	for _, eng := range r.Config.Engines {
		var xs []float64
		for _, c := range r.Cells {
			if c.Engine == eng && c.Fault == KillLeader {
				for _, rd := range c.Rounds {
					if rd.Error == "" {
						xs = append(xs, orInf(rd.FirstAck))
					}
				}
			}
		}
		if len(xs) == 0 {
			continue
		}
		s := bench.SpreadOf(xs)
		checks = append(checks, bench.Judge(eng+": kill -9 of the leader → first acknowledgement by another broker, median", s.Median, "s", false, TargetKillFirstAckMedian).
			Because("%d kills, %s to %s", s.N, secs(s.Min), secs(s.Max)))
	}
	if v, cells := total(LostWrite, IsolateLeader); cells > 0 {
		last := 0.0
		for _, c := range r.Cells {
			for _, rd := range c.Rounds {
				last = max(last, rd.CutOffLast)
			}
		}
		checks = append(checks,
			bench.Judge("a cut-off leader stops acknowledging within its session timeout (last ack after the cut)", last, "s", false, r.Config.SessionTimeout).
				Because("the latest over every round of %d cells", cells),
			bench.Judge("a cut-off leader never acknowledges acks=all alone (its acknowledgements lost)", v, "", false, 0).Because("over %d cells", cells))
	}
	for _, f := range []struct{ fault, what string }{{RollingRestart, "a rolling restart"}, {RollingUpgrade, "a rolling upgrade from an older build"}} {
		if v1, cells := total(LostWrite, f.fault); cells > 0 {
			v2, _ := total(Duplicate, f.fault)
			checks = append(checks, bench.Judge(f.what+" under load: lost and duplicated", v1+v2, "", false, 0).Because("over %d cells", cells))
		}
	}
	return checks
}

func orInf(v float64) float64 {
	if v < 0 {
		return math.Inf(1)
	}
	return v
}

// Report renders the run as markdown.
func (r *Result) Report() []byte {
	rep := &bench.Report{Title: "Fault matrix: a three-broker cluster broken on purpose"}
	s := rep.Section("Targets")
	s.Para("Three brokers (%s), each a cmd/broker process in a network namespace of its own with its own address, every one a controller voter; "+
		"topic %q of %d partitions, replication factor %d, min.insync.replicas %d, sync=%s, broker session timeout %s. "+
		"The load average was %s at the start and %s at the end (1, 5 and 15 minutes).",
		r.Cores(), Topic, Partitions, Brokers, MinISR, r.Config.Sync, secs(r.Config.SessionTimeout),
		bench.LoadAverages(r.Machine.LoadAvg), bench.LoadAverages(r.LoadAfter))
	if busy := r.Busy(); busy != "" {
		s.Para("**%s**", busy)
	}
	s.CheckTable(r.Checks)
	r.matrixSection(rep)
	r.faultsSection(rep)
	r.examplesSection(rep)
	rep.Section("Setup").List(append(r.List(), r.setupLines()...)...)
	return rep.Markdown()
}

func (r *Result) matrixSection(rep *bench.Report) {
	s := rep.Section("The matrix")
	kcat := "kcat (librdkafka) in batches of %d records, each batch one process, acks=all, idempotent"
	if !r.Config.Kcat {
		kcat = "no kcat (not installed: franz-go alone)%.0d"
	}
	s.Para("Per cell, %d rounds of the fault, each healed before the next; the load all through: franz-go's idempotent producer at %s records/s of %d B, acks=all, "+
		"retrying without limit, and "+kcat+"; a consumer reads from the start all along. At the end everything is read back. "+
		"Times are median [min–max] over the rounds: *first ack* from the fault to the first acknowledgement of a partition it hit (for a fault of the leader, by another broker); "+
		"*longest gap* between two acknowledgements of such a partition, from the fault to the end of the round; *full ISR* and *progress* from the heal to every ISR full again "+
		"and to an acknowledgement of every partition (bound %s). *never*: not within the bound.",
		r.Config.Rounds, bench.Rate(r.Config.Rate), r.Config.RecordBytes, r.Config.KcatBatch, secs(r.Config.ProgressBound))
	t := s.Table("engine", "fault", "acknowledged", "lost", "duplicated", "other anomalies", "first ack", "longest gap", "full ISR", "progress")
	for _, c := range r.Cells {
		if c.Error != "" {
			t.Row(c.Engine, c.Fault, "FAILED: "+c.Error, "", "", "", "", "", "", "")
			continue
		}
		other := c.Anomalies.Total() - c.Anomalies.Counts[LostWrite] - c.Anomalies.Counts[Duplicate]
		t.Row(c.Engine, c.Fault, fmt.Sprintf("%d (%d + %d kcat)", c.Acked(), c.AckedFranz, c.AckedKcat),
			fmt.Sprint(c.Anomalies.Counts[LostWrite]), fmt.Sprint(c.Anomalies.Counts[Duplicate]), fmt.Sprint(other),
			spread(c, func(r Round) float64 { return r.FirstAck }), spread(c, func(r Round) float64 { return r.LongestGap }),
			spread(c, func(r Round) float64 { return r.FullISR }), spread(c, func(r Round) float64 { return r.Progress }))
	}
	t.Left(0, 1)
}

func spread(c Cell, f func(Round) float64) string {
	return bench.SpreadText(c.Spread(f), func(v float64) string {
		if math.IsInf(v, 1) {
			return "never"
		}
		return secs(v)
	})
}

func (r *Result) faultsSection(rep *bench.Report) {
	s := rep.Section("Rounds")
	var items []string
	for _, f := range r.Config.Faults {
		items = append(items, fmt.Sprintf("`%s`: %s", f, Doc(f)))
	}
	s.List(items...)
	t := s.Table("engine", "fault", "round", "victim", "what happened")
	for _, c := range r.Cells {
		for i, rd := range c.Rounds {
			t.Row(c.Engine, c.Fault, fmt.Sprint(i+1), rd.Victims, strings.TrimPrefix(rd.say(), "broker "+rd.Victims+": "))
		}
	}
	t.Left(0, 1, 4)
}

func (r *Result) examplesSection(rep *bench.Report) {
	var lines []string
	for _, c := range r.Cells {
		for _, ex := range c.Anomalies.Examples {
			lines = append(lines, fmt.Sprintf("%s %s: %s", c.Engine, c.Fault, ex))
		}
	}
	if len(lines) == 0 {
		return
	}
	rep.Section("Anomalies found (first examples per cell)").List(lines...)
}

func (r *Result) setupLines() []string {
	return []string{
		fmt.Sprintf("faults: %s; the disk of %s is a tmpfs of %s per broker", strings.Join(r.Config.Faults, ", "), FillFollower, bench.Bytes(r.Config.DiskBytes)),
		"hosts: broker/harness/netlab (a bridge, a network namespace and a veth pair per broker); a leader is cut off from the other brokers by blackhole routes both ways, a follower from everyone by taking its veth down",
	}
}

// Write writes faults.md and faults.json into dir.
func (r *Result) Write(dir string) error {
	return bench.WriteReport(dir, ReportFile, r.Report(), ResultsFile, r)
}

// Load reads a run's faults.json; the checks are judged again.
func Load(path string) (*Result, error) {
	return bench.Load(path, func(b []byte) (*Result, error) { return bench.Decode(b, (*Result).judge) })
}
