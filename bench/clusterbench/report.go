package clusterbench

import (
	"fmt"
	"math"
	"strings"

	"github.com/minikafka/minikafka/bench"
)

// Files the profile writes in its results directory.
const (
	ReportFile  = "cluster.md"
	ResultsFile = "cluster.json"
	ChartFile   = "cluster-topics.png"
)

// Report renders the run as markdown; chart is the topic-creation
// chart's file name ("" without one).
func (r *Result) Report(chart string) []byte {
	rep := &bench.Report{Title: "Cluster benchmark: failover, fencing, topic creation, restart at scale"}
	r.targets(rep)
	r.controllerSection(rep)
	r.fencingSection(rep)
	r.creationSection(rep, chart)
	r.scaleSection(rep)
	rep.Failures(r.failures())
	rep.Section("Setup").List(append(r.List(), r.setupLines()...)...)
	return rep.Markdown()
}

func (r *Result) targets(rep *bench.Report) {
	s := rep.Section("Targets")
	s.Para("%d brokers on this machine (%s), every one a controller voter, as child processes on loopback ports; the brokers' sync policy is sync=%s. "+
		"The load average was %s at the start and %s at the end (1, 5 and 15 minutes). "+
		"A check is UNRESOLVED when its bound lies inside the %.0f %% confidence interval of the quantile it judges (read from the order statistics of its own measurements).",
		r.Config.Brokers, r.Cores(), r.Config.Sync, bench.LoadAverages(r.Machine.LoadAvg), bench.LoadAverages(r.LoadAfter), bench.Confidence*100)
	if busy := r.Busy(); busy != "" {
		s.Para("**%s**", busy)
	}
	s.CheckTable(r.Checks)
}

func ms(v float64) string { return bench.Millis(v) }

// durationRow is median, its interval, min and max of a cell's figure.
func durationRow(c *Cell, fig func(Rep) float64) []string {
	s := c.Spread(fig)
	lo, hi := c.Quantiles(fig).Interval(0.5, bench.Confidence)
	interval := "–"
	if s.OK() {
		interval = ms(lo) + "–" + ms(hi)
	}
	return []string{ms(s.Median), interval, ms(s.Min), ms(s.Max)}
}

func (r *Result) controllerSection(rep *bench.Report) {
	s := rep.Section("Controller failover")
	s.Para("Each of %d rounds kills (SIGKILL) the node that leads the controller quorum (as DescribeQuorum names it), then sends CreateTopics for a new topic "+
		"(1 partition, 2 replicas) directly to the two survivors in turn, 10 ms apart, each request allowed 5 s (a broker forwards it to the active controller it finds). "+
		"The figure is from just before the kill to the first CreateTopics that succeeds. The killed node is then started again, and every node must list %d brokers before the next round.",
		r.Config.Kills, r.Config.Brokers)
	t := s.Table("engine", "kills", "median", fmt.Sprintf("%.0f %% interval", bench.Confidence*100), "min", "max", "CreateTopics sent (median)")
	for _, e := range r.Config.Engines {
		c := r.Cell(e, ControllerFailover)
		if c == nil {
			continue
		}
		t.Row(append(append([]string{e, fmt.Sprintf("%d/%d", c.Finished(), len(c.Reps))}, durationRow(c, Seconds)...),
			fmt.Sprintf("%.0f", c.Median(Attempts)))...)
	}
}

func (r *Result) fencingSection(rep *bench.Report) {
	s := rep.Section("Broker failure")
	s.Para("Each of %d rounds creates a topic of 3 partitions with 3 replicas (each broker the preferred leader of one), kills (SIGKILL) a broker other than the active controller, "+
		"the two in turn, and polls the Metadata of both survivors every %v until neither lists the killed broker nor shows a partition of the topic led by it or by nobody. "+
		"The figure is from just before the kill until both survivors say so. The broker is then started again and the topic's ISRs must refill before the next round.",
		r.Config.Kills, probeEvery)
	t := s.Table("engine", "kills", "median", fmt.Sprintf("%.0f %% interval", bench.Confidence*100), "min", "max", "leaderships moved")
	longest := math.NaN()
	for _, e := range r.Config.Engines {
		c := r.Cell(e, BrokerFailure)
		if c == nil {
			continue
		}
		t.Row(append(append([]string{e, fmt.Sprintf("%d/%d", c.Finished(), len(c.Reps))}, durationRow(c, Seconds)...),
			fmt.Sprintf("%.0f", sum(c, Moved)))...)
		if m := c.Spread(Seconds).Max; !math.IsNaN(m) && (math.IsNaN(longest) || m > longest) {
			longest = m
		}
	}
	if math.IsNaN(longest) {
		return
	}
	session := r.Config.SessionTimeout.Seconds()
	p := fmt.Sprintf("Kafka fences a broker that stops heartbeating after broker.session.timeout.ms, %s by default; these brokers ran with a session timeout of %s (-broker-session-timeout). "+
		"The longest fencing measured, %s, is %.1f %% of Kafka's default", bench.Millis(KafkaSessionTimeout.Seconds()), bench.Millis(session), ms(longest), longest/KafkaSessionTimeout.Seconds()*100)
	if longest < session {
		p += " and shorter than the session timeout: no fencing here waited for a session to expire."
	} else {
		p += ", and not shorter than the session timeout: some fencing waited for a session to expire."
	}
	s.Para("%s", p)
}

func sum(c *Cell, fig func(Rep) float64) float64 {
	total := 0.0
	for _, r := range c.Reps {
		if v := fig(r); !math.IsNaN(v) {
			total += v
		}
	}
	return total
}

func (r *Result) creationSection(rep *bench.Report, chart string) {
	s := rep.Section("Topic creation")
	s.Para("Topics of %[2]d partitions with 3 replicas (%[1]s), created one at a time, through each broker in turn (a broker answers CreateTopics once its own metadata has the topic). "+
		"Then the Metadata of every broker the topic is placed on is polled every %[3]v until it lists the topic with a leader for every partition; "+
		"then one record is produced to every partition with acks=all and, at the same time, with acks=1 (franz-go clients made before the first topic, "+
		"metadata refreshed at most every 10 ms, retries 5 ms apart). The figure is from the CreateTopics request until the acks=all produce to every partition is acknowledged; "+
		"the columns before it are from the same start.", r.topicCounts(), r.Config.TopicPartitions, probeEvery)
	t := s.Table("engine", "topics", "CreateTopics answered p50 / p99", "listed by every replica p50 / p99", "acks=1 p50 / p99", "acks=all p50 / p99", "acks=all max", "acks=all beyond acks=1 (median)")
	for _, e := range r.Config.Engines {
		c := r.Cell(e, TopicCreation)
		if c == nil {
			continue
		}
		pair := func(fig func(Rep) float64) string {
			q := c.Quantiles(fig)
			return ms(q.At(0.5)) + " / " + ms(q.At(0.99))
		}
		beyond := bench.SpreadOf(diffs(c, Seconds, LeaderAck)).Median
		t.Row(e, fmt.Sprintf("%d/%d", c.Finished(), len(c.Reps)), pair(Created), pair(Listed), pair(LeaderAck), pair(Seconds),
			ms(c.Quantiles(Seconds).Max()), ms(beyond))
	}
	if chart != "" {
		s.Para("![Topic creation to served](%s)", chart)
	}
}

// topicCounts says how many topics each engine created.
func (r *Result) topicCounts() string {
	if len(r.Config.Engines) <= 1 || r.Config.OtherTopics == 0 || r.Config.OtherTopics == r.Config.Topics {
		return fmt.Sprintf("%d topics", r.Config.Topics)
	}
	return fmt.Sprintf("%d topics on %s, the first engine, %d on each other one", r.Config.Topics, r.Config.Engines[0], r.Config.OtherTopics)
}

// diffs is a(rep) - b(rep) for every repetition with both.
func diffs(c *Cell, a, b func(Rep) float64) []float64 {
	var out []float64
	for _, r := range c.Reps {
		if d := a(r) - b(r); !math.IsNaN(d) {
			out = append(out, d)
		}
	}
	return out
}

func (r *Result) scaleSection(rep *bench.Report) {
	if len(r.Config.ScaleEngines) == 0 {
		return
	}
	s := rep.Section("Restart at scale")
	s.Para("%d topics of %d partitions with replication factor %d over the %d brokers, %d partitions in all. "+
		"Each of %d rounds sends SIGTERM to a broker other than the active controller (a controlled shutdown), waits for it to exit, starts it again on the same directory and ports, "+
		"and times from just before the exec until both its own Metadata lists it unfenced (polled every %v) and a produce to one partition it leads is acknowledged (acks=all). "+
		"Replication factor %d: %s",
		r.Config.ScaleTopics, r.Config.ScalePartitions, r.Config.ScaleRF, r.Config.Brokers, r.Config.ScaleTopics*int(r.Config.ScalePartitions),
		r.Config.Restarts, probeEvery, r.Config.ScaleRF, rfReason(r.Config.ScaleRF))
	t := s.Table("engine", "restarts", "topics created in", "partitions it leads", "SIGTERM to exit", "listed itself", "serving (the figure)", "open files once serving")
	for _, e := range r.Config.ScaleEngines {
		c := r.Cell(e, RestartAtScale)
		if c == nil {
			continue
		}
		setup := "–"
		if v, ok := r.ScaleSetup[e]; ok {
			setup = bench.Millis(v)
		}
		count := func(v float64) string { return fmt.Sprintf("%.0f", v) }
		t.Row(e, fmt.Sprintf("%d/%d", c.Finished(), len(c.Reps)), setup,
			bench.SpreadText(c.Spread(Led), count), bench.SpreadText(c.Spread(Shutdown), ms),
			bench.SpreadText(c.Spread(Listed), ms), bench.SpreadText(c.Spread(Seconds), ms),
			bench.SpreadText(c.Spread(OpenFiles), count))
		if first := bench.SpreadOf(diffs(c, Seconds, Listed)); first.OK() && first.Min > 0 {
			s.Para("%s: in each of its %d rounds the broker listed itself before its produce was acknowledged, by %s at the median; the produce is what the figure waits for.",
				e, first.N, ms(first.Median))
		}
	}
}

func rfReason(rf int16) string {
	if rf == 1 {
		return "the restarted broker is the only replica of each partition it holds, so those partitions are offline from its shutdown until it serves again " +
			"and the figure is its own start alone; at RF 3 its partitions would be led elsewhere meanwhile, and it would lead again only after rejoining their ISRs " +
			"and a preferred-leader rebalance (-scale-rf 3 measures that)."
	}
	return "its partitions are led by the other brokers while it is down; the figure includes rejoining their ISRs and the preferred-leader rebalance that gives it a leadership back."
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

func (r *Result) setupLines() []string {
	out := []string{
		fmt.Sprintf("engines: %s for the faults and topic creation; %s for the restart at scale", strings.Join(r.Config.Engines, ", "), orNone(r.Config.ScaleEngines)),
		fmt.Sprintf("measurements: %d kills of each kind per engine, %s, %d restarts at scale per engine", r.Config.Kills, r.topicCounts(), r.Config.Restarts),
	}
	if len(r.Config.Args) > 0 {
		out = append(out, "extra broker flags: `"+strings.Join(r.Config.Args, " ")+"`")
	}
	return out
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// Write writes cluster.md, cluster.json and the chart into dir.
func (r *Result) Write(dir string) error {
	return bench.WriteChartReport(dir, ChartFile, r.writeChart, ReportFile, r.Report, ResultsFile, r)
}

// Load reads a run's cluster.json (see Parse).
func Load(path string) (*Result, error) { return bench.Load(path, Parse) }

// Parse reads a cluster.json; the checks are judged again.
func Parse(b []byte) (*Result, error) {
	return bench.Decode(b, func(r *Result) { r.Checks = r.Judge() })
}
