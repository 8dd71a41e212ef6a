package groupbench

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/broker/group"
)

// Files the profile writes in its results directory.
const (
	ReportFile  = "groups.md"
	ResultsFile = "groups.json"
)

// noise is the largest relative difference, in percent, between two runs
// without groups: what a change must be read against.
func noise(c *Cell) float64 {
	if c == nil {
		return 0
	}
	s := c.Spread(Baseline)
	if s.N < 2 {
		return 0
	}
	return (s.Max/s.Min - 1) * 100
}

// Judge evaluates the targets on every engine of the run.
func (r *Result) Judge() []bench.Check {
	var out []bench.Check
	for _, e := range r.Engines {
		out = append(out,
			bench.Judge("partitions moved when a 4th member joins 3 (cooperative-sticky), "+e,
				r.Cell(e, ChurnCooperative).Median(Moved), "", false, ChurnTarget),
			bench.Judge(fmt.Sprintf("slowest settle of a %d-member group after its last JoinGroup, %s", SettleMembers, e),
				r.Cell(e, Settle).Spread(SettleMillis).Max/1000, "s", false, SettleTarget.Seconds()))
		load := r.Cell(e, LoadPairs)
		if load == nil {
			continue
		}
		c := bench.Judge(fmt.Sprintf("produce throughput with %d groups' heartbeats and commits, %s", r.Config.LoadGroups, e),
			load.Median(Change), "%", true, -LoadTarget)
		// Runs without groups that differ among themselves by more than
		// twice the target leave no change readable at that resolution,
		// whichever way the median went.
		if n := noise(load); c.Verdict != bench.Missing && n > 2*LoadTarget {
			c.Verdict = bench.Unresolved
			c = c.Because("runs without groups differ by %.0f %% among themselves", n)
		}
		out = append(out, c)
	}
	return out
}

// Ratios are each engine's produce rate with group traffic over its rate
// without, for the regression check; none gates: their noise is larger
// than the check's tolerance on a shared machine.
func (r *Result) Ratios() []bench.Ratio {
	var out bench.Ratios
	for _, e := range r.Engines {
		out.Add("produce with groups / without: "+e, 1+r.Cell(e, LoadPairs).Median(Change)/100, false)
	}
	return out.Sorted()
}

// Report renders the run as markdown.
func (r *Result) Report() []byte {
	rep := &bench.Report{Title: "Consumer groups: churn and settle time"}
	r.how(rep)
	r.results(rep)
	r.loadSection(rep)
	t := rep.Section("Targets")
	var lines []string
	for _, c := range r.Checks {
		lines = append(lines, c.String())
	}
	t.List(lines...)
	rep.Failures(r.failures())
	if len(r.Engines) > 0 {
		a := rep.Section("Assignments (cooperative-sticky, first engine)")
		if c := r.Cell(r.Engines[0], ChurnCooperative); c != nil && len(c.Reps) > 0 && c.Reps[0].Error == "" {
			a.Para("Before: %s", c.Reps[0].Before)
			a.Para("After: %s", c.Reps[0].After)
		}
	}
	rep.Section("Setup").List(r.List()...)
	return rep.Markdown()
}

func (r *Result) how(rep *bench.Report) {
	s := rep.Section("How")
	if busy := r.Busy(); busy != "" {
		s.Para("**%s**", busy)
	}
	s.Para("Clients: franz-go group consumers, one in-process broker per engine, sync=always. "+
		"The coordinator's initial rebalance delay (group.initial.rebalance.delay) is %v.",
		time.Duration(r.Config.InitialRebalanceWait*float64(time.Second)))
	s.Para("Churn: %d partitions, %d members settled, a %dth joins; *moved* counts partitions whose owner changed. "+
		"With the eager range balancer every member also revokes everything during the rebalance; "+
		"with cooperative-sticky only the moved partitions stop. *again* is from the new member's start until "+
		"the group is Stable with every partition owned (cooperative-sticky: across both rebalances); the members "+
		"already in the group learn of a rebalance from their next heartbeat, so *again* follows franz-go's "+
		"heartbeat interval (3 s by default), not the broker.",
		ChurnPartitions, ChurnMembers, ChurnMembers+1)
	s.Para("Settle: %d members started at once; the time from the last JoinGroup any of them wrote (a client hook; each "+
		"member joins twice, the second time with the member id the first answer gave it) until the group is Stable with "+
		"every partition owned, as seen by polling DescribeGroups every 2 ms (so it includes the SyncGroup round), %d times per engine.",
		SettleMembers, r.Config.Runs)
}

func msText(v float64) string { return bench.Millis(v / 1000) }

func (r *Result) results(rep *bench.Report) {
	t := rep.Section("Results").Table("engine", "moved (cooperative-sticky)", "again", "moved (range)", "again",
		"settle median", "settle max")
	for _, e := range r.Engines {
		co, rg, st := r.Cell(e, ChurnCooperative), r.Cell(e, ChurnRange), r.Cell(e, Settle)
		spread := func(c *Cell, fig func(Rep) float64, f func(float64) string) string {
			return bench.SpreadText(c.Spread(fig), f)
		}
		count := func(v float64) string { return fmt.Sprintf("%.0f", v) }
		t.Row(e, spread(co, Moved, count), spread(co, SettleMillis, msText), spread(rg, Moved, count), spread(rg, SettleMillis, msText),
			msText(st.Median(SettleMillis)), msText(st.Spread(SettleMillis).Max))
	}
}

func (r *Result) loadSection(rep *bench.Report) {
	pairs := 0
	for _, e := range r.Engines {
		if c := r.Cell(e, LoadPairs); c != nil {
			pairs = max(pairs, len(c.Reps))
		}
	}
	if pairs == 0 {
		return
	}
	s := rep.Section("Produce throughput with group traffic")
	s.Para("%d produce runs of %v each, records of %d bytes (franz-go, acks=all, round-robin over %d partitions, a fresh topic "+
		"each) alternate without and with %d one-member groups that heartbeat every 3 s and commit every 5 s "+
		"(franz-go's defaults) on one shared client. *change* is the median over the pairs (a run without, then one with) "+
		"of the relative change; *noise* is the largest difference between two runs without groups, what the change "+
		"must be read against.",
		2*pairs, time.Duration(r.Config.LoadRunSeconds*float64(time.Second)), r.Config.RecordBytes, ChurnPartitions, r.Config.LoadGroups)
	t := s.Table("engine", "without groups (median)", "with groups (median)", "change", "noise", "group requests/s", "runs without", "runs with")
	for _, e := range r.Engines {
		c := r.Cell(e, LoadPairs)
		if c == nil {
			continue
		}
		t.Row(e, bench.Rate(c.Median(Baseline))+"/s", bench.Rate(c.Median(WithGroups))+"/s",
			bench.FormatUnit(c.Median(Change), "%"), fmt.Sprintf("%.0f %%", noise(c)), fmt.Sprintf("%.0f", c.Median(GroupRequests)),
			rates(c, Baseline), rates(c, WithGroups))
	}
}

// rates lists a figure of every repetition, "–" for a failed one.
func rates(c *Cell, fig func(Rep) float64) string {
	parts := make([]string, len(c.Reps))
	for i, r := range c.Reps {
		parts[i] = bench.Rate(fig(r))
	}
	return strings.Join(parts, " ")
}

func (r *Result) failures() []string {
	var out []string
	for _, c := range r.Cells {
		for _, e := range c.Errors() {
			out = append(out, fmt.Sprintf("%s, %s, %s", c.Target, c.Workload, e))
		}
	}
	return out
}

// Write writes groups.md and groups.json into dir.
func (r *Result) Write(dir string) error {
	return bench.WriteReport(dir, ReportFile, r.Report(), ResultsFile, r)
}

// Load reads a run's groups.json (see Parse).
func Load(path string) (*Result, error) { return bench.Load(path, Parse) }

// Parse reads a groups.json; the checks are judged again. A file written
// by cmd/groupbench, a list of engines with their figures and nothing
// about the machine, is read into cells too.
func Parse(b []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err == nil {
		r.Checks = r.Judge()
		return &r, nil
	}
	type churn struct {
		Moved        int     `json:"moved"`
		SettleMillis float64 `json:"settle_ms"`
		Before       string  `json:"before"`
		After        string  `json:"after"`
	}
	var legacy []struct {
		Engine       string    `json:"engine"`
		Cooperative  churn     `json:"churn_cooperative_sticky"`
		Range        churn     `json:"churn_range"`
		SettleMillis []float64 `json:"settle_ms"`
		Load         struct {
			Groups      int       `json:"groups"`
			RunSeconds  float64   `json:"run_seconds"`
			RecordBytes int       `json:"record_bytes"`
			Baseline    []float64 `json:"baseline_records_per_s"`
			WithGroups  []float64 `json:"with_groups_records_per_s"`
			GroupReqs   []float64 `json:"group_requests_per_s"`
		} `json:"load"`
	}
	if err := json.Unmarshal(b, &legacy); err != nil {
		return nil, err
	}
	for _, e := range legacy {
		r.Engines = append(r.Engines, e.Engine)
		for w, c := range map[string]churn{ChurnCooperative: e.Cooperative, ChurnRange: e.Range} {
			r.add(e.Engine, w, Rep{Moved: c.Moved, SettleMillis: c.SettleMillis, Before: c.Before, After: c.After})
		}
		for _, ms := range e.SettleMillis {
			r.add(e.Engine, Settle, Rep{SettleMillis: ms})
		}
		l := e.Load
		for i := range min(len(l.Baseline), len(l.WithGroups), len(l.GroupReqs)) {
			r.add(e.Engine, LoadPairs, Rep{Baseline: l.Baseline[i], WithGroups: l.WithGroups[i], GroupRequests: l.GroupReqs[i]})
		}
		r.Config.LoadGroups, r.Config.LoadRunSeconds, r.Config.RecordBytes = l.Groups, l.RunSeconds, l.RecordBytes
		r.Config.Runs = len(e.SettleMillis)
	}
	r.Config.InitialRebalanceWait = group.DefaultInitialRebalanceDelay.Seconds()
	r.Checks = r.Judge()
	return &r, nil
}
