package reassign

import (
	"fmt"
	"math"

	"github.com/minikafka/minikafka/bench"
)

// The report's files.
const (
	ReportFile  = "reassign.md"
	ResultsFile = "reassign.json"
)

func (r *Result) judge() { r.Checks = r.Judge() }

// Judge checks the targets on each engine's move.
func (r *Result) Judge() []bench.Check {
	var checks []bench.Check
	for _, run := range r.Runs {
		if run.Error != "" {
			checks = append(checks, bench.Judge(run.Engine+": the move", math.NaN(), "", false, 0).Because("failed: %s", run.Error))
			continue
		}
		a := run.Audit
		checks = append(checks,
			bench.Judge(run.Engine+": acknowledged records lost or duplicated by the move", float64(a.Lost+a.Duplicated+a.Misplaced), "", false, 0).
				Because("%d acknowledged: %d lost, %d duplicated, %d misplaced", a.Acked, a.Lost, a.Duplicated, a.Misplaced),
			bench.Judge(run.Engine+": longest gap between two acknowledgements of a partition during the move", run.LongestGap, "s", false, TargetLongestGap).
				Because("a move of %s in %s", bench.Bytes(run.Moved), secs(run.Move)),
			bench.Judge(run.Engine+": throughput during the move / before it", run.Ratio(), "×", true, TargetThroughputRatio).
				Because("%s records/s before, %s during", bench.Rate(run.Before), bench.Rate(run.During)))
	}
	return checks
}

// Report renders the run as markdown.
func (r *Result) Report() []byte {
	rep := &bench.Report{Title: "Partition reassignment under load"}
	s := rep.Section("Targets")
	s.Para("Four brokers (%s), each a cmd/broker process on loopback, every one a controller voter; topic %q of %d partitions, "+
		"replication factor 3 on brokers 1-3, min.insync.replicas %d, sync=%s. The topic is filled to %s by a closed-loop producer "+
		"(franz-go, acks=all, idempotent, %d records in flight, values of %d B), which keeps producing through the run; a tracked "+
		"idempotent producer at %s records/s of 100 B runs beside it from the end of the fill. Then one AlterPartitionReassignments "+
		"request moves every partition's replica on broker 1 to broker 4 (KIP-455: the new replica is added, catches up, joins the ISR, "+
		"and the old one leaves), %s. *Before* is the closed loop's acknowledgement rate over the %s before the request, *during* over the "+
		"move, from the request until no reassignment is listed and every partition shows its target with a full ISR. The longest gap "+
		"is the tracked producer's, per partition, during the move. At the end everything is read back. The load average was %s at the "+
		"start and %s at the end.",
		r.Cores(), Topic, Partitions, MinISR, r.Config.Sync, bench.Bytes(r.Config.Bytes), maxBuffered, r.Config.RecordBytes,
		bench.Rate(r.Config.Rate), r.throttleText(), secs(r.Config.Window), bench.LoadAverages(r.Machine.LoadAvg), bench.LoadAverages(r.LoadAfter))
	if busy := r.Busy(); busy != "" {
		s.Para("**%s**", busy)
	}
	s.CheckTable(r.Checks)
	t := rep.Section("The moves").Table("engine", "moved", "stored", "move took", "throttle", "records/s before", "records/s during", "during / before",
		"longest gap", "longest gap before", "acknowledged", "lost", "duplicated", "replicas after")
	for _, run := range r.Runs {
		if run.Error != "" {
			t.Row(run.Engine, "FAILED: "+run.Error)
			continue
		}
		throttle := "none"
		if run.Throttle > 0 {
			throttle = bench.Bytes(run.Throttle) + "/s"
		}
		t.Row(run.Engine, bench.Bytes(run.Moved), bench.Bytes(run.Stored), secs(run.Move), throttle, bench.Rate(run.Before), bench.Rate(run.During),
			fmt.Sprintf("%.2f×", run.Ratio()), secs(run.LongestGap), secs(run.GapBefore), fmt.Sprint(run.Audit.Acked), fmt.Sprint(run.Audit.Lost),
			fmt.Sprint(run.Audit.Duplicated), fmt.Sprint(run.Replicas))
	}
	t.Left(0, 13)
	var gaps []string
	for _, run := range r.Runs {
		if run.Error == "" && run.Timeline != nil {
			gaps = append(gaps, fmt.Sprintf("%s: partition %d, from +%.2f s to +%.2f s after the request; its metadata within a second of it: %s",
				run.Engine, run.GapPartition, run.GapFrom, run.GapTo, around(run.Timeline, run.GapPartition, run.GapFrom, run.GapTo)))
		}
	}
	if len(gaps) > 0 {
		rep.Section("Where the longest gaps fell").List(gaps...)
	}
	rep.Section("Setup").List(r.List()...)
	return rep.Markdown()
}

// throttleText says how the move was throttled.
func (r *Result) throttleText() string {
	if r.Config.Throttle <= 0 {
		return "unthrottled"
	}
	return fmt.Sprintf("throttled as kafka-reassign-partitions --throttle does (leader and follower rates on brokers 1-4, "+
		"the current replicas and the new one listed) at %.2g× the bytes a second the topic grew by on disk before the move (franz-go compresses the closed loop's batches), "+
		"and only while the new replica is out of the ISR", r.Config.Throttle)
}

// Write writes reassign.md and reassign.json into dir.
func (r *Result) Write(dir string) error {
	return bench.WriteReport(dir, ReportFile, r.Report(), ResultsFile, r)
}

// Load reads a run's reassign.json; the checks are judged again.
func Load(path string) (*Result, error) {
	return bench.Load(path, func(b []byte) (*Result, error) { return bench.Decode(b, (*Result).judge) })
}
