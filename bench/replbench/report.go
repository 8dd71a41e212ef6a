package replbench

import (
	"fmt"
	"math"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
)

// Files the profile writes in its results directory.
const (
	ReportFile  = "replication.md"
	ResultsFile = "replication.json"
	ChartFile   = "replication-kill.png"
)

func ms(v float64) string { return bench.Millis(v) }

// Report renders the run as markdown; chart is the kill chart's file
// name ("" without one).
func (r *Result) Report(chart string) []byte {
	rep := &bench.Report{Title: "Replication benchmark: the same ISR replication over each engine"}
	r.targets(rep)
	r.throughputSection(rep)
	r.latencySection(rep)
	r.killSection(rep, chart)
	r.stopSection(rep)
	r.auditSection(rep)
	r.catchUpSection(rep)
	rep.Failures(r.failures())
	rep.Section("Setup").List(append(r.List(), r.setupLines()...)...)
	return rep.Markdown()
}

func (r *Result) targets(rep *bench.Report) {
	s := rep.Section("Targets")
	s.Para("Three brokers on this machine (%s), every one a controller voter, each a child process; topics of replication factor %d with min.insync.replicas %d, "+
		"the brokers under sync=%s, so that acks=all means on the disk of at least %d brokers. The load average was %s at the start and %s at the end (1, 5 and 15 minutes). "+
		"A median check is UNRESOLVED when its bound lies inside the %.0f %% confidence interval of the median (order statistics of its own measurements); "+
		"a ratio check when its bound lies within the ratio give or take the largest spread of the runs it divides.",
		r.Cores(), Replicas, MinISR, r.Config.Sync, MinISR, bench.LoadAverages(r.Machine.LoadAvg), bench.LoadAverages(r.LoadAfter), bench.Confidence*100)
	if busy := r.Busy(); busy != "" {
		s.Para("**%s**", busy)
	}
	s.CheckTable(r.Checks)
}

func (r *Result) throughputSection(rep *bench.Report) {
	s := rep.Section("Throughput: RF 3 against one broker at RF 1")
	s.Para("Per engine, %d pairs of closed-loop produce runs of %v each, alternating: one broker alone (no cluster flags) at RF 1, then the three-broker cluster at RF %d, "+
		"each on a fresh topic of %d partitions deleted afterwards (the next run starts once every broker has deleted its files, which a broker does in the background, paced). The load is the same for both: one franz-go producer, acks=all, idempotent, records of %d B "+
		"spread by the sticky partitioner, up to %d records in flight. Figures are median [min–max] over the runs.",
		r.Config.Reps, secs(r.Config.RunSeconds), Replicas, r.Config.Partitions, r.Config.RecordBytes, load.DefaultInFlight)
	t := s.Table("engine", "RF 1 records/s", "RF 3 records/s", "RF 3 / RF 1", "RF 1 MB/s", "RF 3 MB/s", "RF 1 ack p99", "RF 3 ack p99")
	for _, e := range r.Config.Engines {
		rf1, rf3 := r.Cell(e, ProduceRF1), r.Cell(e, ProduceRF3)
		t.Row(e, bench.SpreadText(rf1.Spread(RecordsPerSec), bench.Rate), bench.SpreadText(rf3.Spread(RecordsPerSec), bench.Rate),
			bench.Times(r.ThroughputRatio(e)), bench.MB(rf1.Median(BytesPerSec)), bench.MB(rf3.Median(BytesPerSec)),
			bench.SpreadText(rf1.Spread(P99), ms), bench.SpreadText(rf3.Spread(P99), ms))
	}
	s.Para("What the same runs cost the brokers: the flush requests the data's block device completed during each run's produce (from its counters in /sys/dev/block; " +
		"every fsync or fdatasync of every broker reaches the disk as one or more; the run's other servers are idle meanwhile) per batch the producer had acknowledged, " +
		"and the CPU time (user and system) of every broker process over the same time per record acknowledged: at RF 3 all three brokers', the followers' included.")
	c := s.Table("engine", "RF 1 flushes per batch", "RF 3 flushes per batch", "RF 3 flushes / segment's", "RF 1 CPU per record", "RF 3 CPU per record", "CPU RF 3 / RF 1")
	for _, e := range r.Config.Engines {
		rf1, rf3 := r.Cell(e, ProduceRF1), r.Cell(e, ProduceRF3)
		c.Row(e, bench.SpreadText(rf1.Spread(FlushesPerBatch), flushes), bench.SpreadText(rf3.Spread(FlushesPerBatch), flushes),
			bench.Times(r.FlushRatio(e)), bench.SpreadText(rf1.Spread(CPUPerRecord), micros), bench.SpreadText(rf3.Spread(CPUPerRecord), micros),
			bench.Times(r.CPURatio(e)))
	}
}

// micros formats seconds as microseconds.
func micros(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.1f µs", v*1e6)
}

func flushes(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func secs(s float64) string { return bench.Millis(s) }

func (r *Result) latencySection(rep *bench.Report) {
	s := rep.Section("acks=all latency at half the peak")
	s.Para("One open-loop run of %v per engine at half the median RF 3 rate above, on the cluster (RF %d), then at the same rate on the single broker (RF 1) for reference; "+
		"the producer lingers %v (Kafka's linger.ms default; the throughput runs keep franz-go's 10 ms), and the first %v (connections, metadata, producer id) is left out of the figures. "+
		"Latency runs from each record's intended send time to its acknowledgement, so a stall is charged to every record it delays, the load generator's own included (*schedule behind*: it shares the CPUs with the brokers).",
		secs(r.Config.RunSeconds), Replicas, LatencyLinger, LatencyWarmup)
	t := s.Table("engine", "rate records/s", "RF 3 p50", "RF 3 p99", "RF 3 p99.9", "RF 3 max", "RF 1 p50", "RF 1 p99", "RF 1 max", "schedule behind (RF 3)")
	for _, e := range r.Config.Engines {
		c3, c1 := r.Cell(e, LatencyRF3), r.Cell(e, LatencyRF1)
		rate := math.NaN()
		if c3 != nil && len(c3.Reps) > 0 {
			rate = c3.Reps[0].Rate
		}
		behind := "–"
		if c3 != nil && len(c3.Reps) > 0 && c3.Reps[0].Error == "" {
			behind = ms(c3.Reps[0].Behind)
		}
		t.Row(e, bench.Rate(rate), ms(c3.Median(P50)), ms(c3.Median(P99)), ms(c3.Median(P999)), ms(c3.Median(Max)),
			ms(c1.Median(P50)), ms(c1.Median(P99)), ms(c1.Median(Max)), behind)
	}
	r.lowerRatesTable(s)
}

// lowerRatesTable shows the RF 3 latency at half the peak and below it:
// where the tail stands once the brokers and the load generator have CPU
// and disk to spare.
func (r *Result) lowerRatesTable(s *bench.Section) {
	s.Para("The same open-loop run on the cluster at lower rates, one run each:")
	t := s.Table("engine", "share of the RF 3 peak", "rate records/s", "p50", "p99", "p99.9", "max")
	for _, e := range r.Config.Engines {
		peak := r.Cell(e, ProduceRF3).Median(RecordsPerSec)
		var reps []Rep
		for _, w := range []string{LatencyRF3, LatencyLower} {
			if c := r.Cell(e, w); c != nil {
				reps = append(reps, c.Reps...)
			}
		}
		for _, x := range reps {
			share := fmt.Sprintf("1/%.0f", peak/x.Rate)
			if x.Error != "" {
				t.Row(e, share, bench.Rate(x.Rate), "failed: "+x.Error, "", "", "")
				continue
			}
			t.Row(e, share, bench.Rate(x.Rate), ms(x.P50), ms(x.P99), ms(x.P999), ms(x.Max))
		}
	}
}

func (r *Result) killSection(rep *bench.Report, chart string) {
	s := rep.Section("kill -9 of a leader under load")
	s.Para("A tracked producer writes %s records/s of %d B round-robin to a topic of %d partitions (RF %d), franz-go's idempotent producer with acks=all, "+
		"retrying without limit (metadata refreshed at most every 10 ms, retries 5 ms apart); a client hook notes which broker acknowledged each batch. "+
		"Each of %d rounds kills (SIGKILL) the leader of partition 0; the figure is from just before the kill to the first acknowledgement of partition 0 by another broker. "+
		"The killed broker is then started again (once its registration is fenced), and the next round starts once every ISR is full again (a round that finds them still short after a minute fails).",
		bench.Rate(r.Config.FaultRate), r.Config.RecordBytes, FaultPartitions, Replicas, r.Config.Kills)
	t := s.Table("engine", "kills", "median", fmt.Sprintf("%.0f %% interval", bench.Confidence*100), "min", "max", "killed leader was the controller", "median then", "median otherwise")
	for _, e := range r.Config.Engines {
		c := r.Cell(e, KillLeader)
		if c == nil {
			continue
		}
		st := c.Spread(Seconds)
		lo, hi := c.Quantiles(Seconds).Interval(0.5, bench.Confidence)
		interval := "–"
		if st.OK() {
			interval = ms(lo) + "–" + ms(hi)
		}
		was, wasNot := split(c, func(x Rep) bool { return x.Controller })
		t.Row(e, fmt.Sprintf("%d/%d", c.Finished(), len(c.Reps)), ms(st.Median), interval, ms(st.Min), ms(st.Max),
			fmt.Sprintf("%d", controllers(c)), ms(was.Median), ms(wasNot.Median))
	}
	if chart != "" {
		s.Para("![Acknowledgements of partition 0 around the first kill](%s)", chart)
	}
}

// split is the spread of the figure over the finished repetitions for
// which pick holds, and over the others.
func split(c *Cell, pick func(Rep) bool) (yes, no bench.Spread) {
	var a, b []float64
	for _, x := range c.Reps {
		v := Seconds(x)
		if math.IsNaN(v) {
			continue
		}
		if pick(x) {
			a = append(a, v)
		} else {
			b = append(b, v)
		}
	}
	return bench.SpreadOf(a), bench.SpreadOf(b)
}

func (r *Result) stopSection(rep *bench.Report) {
	s := rep.Section("SIGTERM of a leader under load")
	s.Para("The same producer, after the kills. Each of %d rounds sends SIGTERM to the leader of partition 0 (a controlled shutdown: its leaderships move first); "+
		"the figure is the longest time between two consecutive acknowledgements of one partition, any of the %d, from the signal until %v after the broker exited. "+
		"*without a fault* is the same longest gap over %v before the first kill. The broker is then started again, as after a kill.",
		r.Config.Stops, FaultPartitions, afterStop, quietWindow)
	t := s.Table("engine", "stops", "longest stall median", "min", "max", "without a fault", "SIGTERM to exit (median)", "stopped leader was the controller")
	for _, e := range r.Config.Engines {
		c := r.Cell(e, StopLeader)
		if c == nil {
			continue
		}
		st := c.Spread(Seconds)
		t.Row(e, fmt.Sprintf("%d/%d", c.Finished(), len(c.Reps)), ms(st.Median), ms(st.Min), ms(st.Max), ms(c.Median(Quiet)),
			ms(c.Median(Shutdown)), fmt.Sprintf("%d", controllers(c)))
	}
}

func (r *Result) auditSection(rep *bench.Report) {
	s := rep.Section("Nothing acknowledged lost")
	s.Para("Once the kills and stops are over the producer stops (what is still in flight then gets 30 s), and a new consumer reads the topic from the start up to its end offsets, " +
		"once those cover every acknowledged offset. Every acknowledged record must be there exactly once, at the partition and offset it was acknowledged at.")
	t := s.Table("engine", "acknowledged", "consumed", "lost", "duplicated", "misplaced", "never acknowledged")
	for _, e := range r.Config.Engines {
		c := r.Cell(e, Audit)
		if c == nil || len(c.Reps) == 0 {
			continue
		}
		a := c.Reps[0]
		if a.Error != "" {
			t.Row(e, "–", "–", "–", "–", "–", "–")
			continue
		}
		t.Row(e, fmt.Sprint(a.Acked), fmt.Sprint(a.Consumed), fmt.Sprint(a.Lost), fmt.Sprint(a.Duplicated), fmt.Sprint(a.Misplaced), fmt.Sprint(a.Unacked))
	}
}

func (r *Result) catchUpSection(rep *bench.Report) {
	s := rep.Section("A follower catching up")
	in := r.Config.Ingest
	s.Para("A broker other than the controller is stopped (SIGTERM); once it is fenced and out of the ISRs, %s of %d B records are produced with acks=1 "+
		"(written as fast as the leaders take them; min.insync.replicas does not apply to acks=1) to a fresh topic of %d partitions, RF %d; "+
		"then the broker is started again, and timed from the exec until it is back in the ISR of every partition. "+
		"Its rate is the records' bytes over that time, against the engine's bulk ingest measured in this run in this process "+
		"(the engines profile's workload: %d records of %d B in batches of %d, each batch durable before the next, %d times).",
		bench.Bytes(r.Config.CatchUpBytes), r.Config.RecordBytes, r.Config.Partitions, Replicas, in.Records, in.RecordBytes, in.BatchRecords, r.Config.IngestReps)
	t := s.Table("engine", "behind", "listed again", "back in every ISR", "catch-up MB/s", "bulk ingest MB/s", "catch-up / ingest")
	for _, e := range r.Config.Engines {
		c, ing := r.Cell(e, CatchUp), r.Cell(e, Ingest)
		behind, listed := "–", "–"
		if c != nil && len(c.Reps) > 0 && c.Reps[0].Error == "" {
			behind, listed = bench.Bytes(c.Reps[0].Bytes), ms(c.Reps[0].Listed)
		}
		t.Row(e, behind, listed, ms(c.Median(Seconds)), bench.MB(c.Median(CatchUpRate)),
			bench.SpreadText(ing.Spread(BytesPerSec), bench.MB), bench.Times(r.CatchUpRatio(e)))
	}
}

func (r *Result) failures() []string {
	var out []string
	for _, c := range r.Cells {
		for _, e := range c.Errors() {
			out = append(out, fmt.Sprintf("%s, %s, %s", c.Target, c.Workload, e))
		}
		for i, x := range c.Reps {
			if x.Recovery != "" {
				out = append(out, fmt.Sprintf("%s, %s, rep %d (its figure stands): the cluster did not recover after it: %s", c.Target, c.Workload, i+1, x.Recovery))
			}
		}
	}
	return out
}

func (r *Result) setupLines() []string {
	out := []string{fmt.Sprintf("engines: %s, one after the other, each on a fresh cluster", strings.Join(r.Config.Engines, ", "))}
	if len(r.Config.Args) > 0 {
		out = append(out, "extra broker flags: `"+strings.Join(r.Config.Args, " ")+"`")
	}
	return out
}

// Write writes replication.md, replication.json and the chart into dir.
func (r *Result) Write(dir string) error {
	return bench.WriteChartReport(dir, ChartFile, r.writeChart, ReportFile, r.Report, ResultsFile, r)
}

// Load reads a run's replication.json (see Parse).
func Load(path string) (*Result, error) { return bench.Load(path, Parse) }

// Parse reads a replication.json; the checks are judged again.
func Parse(b []byte) (*Result, error) {
	return bench.Decode(b, func(r *Result) { r.Checks = r.Judge() })
}
