package logbench

import (
	"fmt"
	"strings"

	"github.com/minikafka/minikafka/bench"
)

// The report's sections on the restart after a kill and on what
// replication asks of the engines (kill.go, replica.go).

func killSection(rep *bench.Report, r *Results) {
	if len(taking(r, WorkloadKill)) == 0 {
		return
	}
	s := rep.Section("Restart after kill -9")
	s.Para("The ingested log (%d records) opened by a child process, which appends %s more in synced batches of %d records and is killed with SIGKILL; a second child then opens the log and reads its first record, timed from before Open, and is killed too, so that every restart measured recovers from a kill. Warm is with the page cache as the kill left it; cold evicts the log first, after another appending child was killed.",
		r.Config.Records, bench.Bytes(min(killAppendBytes, r.Config.Records*int64(r.Config.RecordBytes))), r.Config.BatchRecords)
	t := s.Table("subject", "warm", "cold", "cache (cold run)", "device read (cold run)", "notes").Left(3, 5)
	for _, n := range taking(r, WorkloadKill) {
		notes := strings.TrimSpace(failures(r, n, WorkloadKill) + " " + failures(r, n, WorkloadKillCold))
		t.Row(n, bench.SpreadText(r.Spread(n, WorkloadKill, Duration), bench.Millis),
			bench.SpreadText(r.Spread(n, WorkloadKillCold, Duration), bench.Millis),
			cacheCell(r, n, WorkloadKillCold), bytesCell(r.Median(n, WorkloadKillCold, DeviceReadBytes)), notes)
	}
}

func trimSection(rep *bench.Report, r *Results) {
	if len(taking(r, WorkloadDeleteHalf)) == 0 {
		return
	}
	s := rep.Section("Truncate and delete, as replication asks")
	s.Para("On the log the restarts left: Truncate of its last %s, each from the whole log (what a cut dropped is appended again, untimed, before the next), then DeleteBefore of its oldest half. Time is the call's; written is what the device wrote meanwhile; freed is how much the directory's allocation shrank, measured after the engine closed (space is reclaimed at each engine's granularity, and may lag).",
		shares())
	head := []string{"subject"}
	for _, pct := range TruncateShares {
		head = append(head, fmt.Sprintf("truncate %d %%", pct), "written")
	}
	head = append(head, "delete half", "freed", "notes")
	t := s.Table(head...).Left(len(head) - 1)
	for _, n := range taking(r, WorkloadDeleteHalf) {
		row := []string{n}
		var notes []string
		for _, pct := range TruncateShares {
			wl := TruncateWorkload(pct)
			row = append(row, bench.SpreadText(r.Spread(n, wl, Duration), bench.Millis), bytesCell(r.Median(n, wl, DeviceWrittenBytes)))
			notes = append(notes, failures(r, n, wl))
		}
		notes = append(notes, failures(r, n, WorkloadDeleteHalf))
		row = append(row, bench.SpreadText(r.Spread(n, WorkloadDeleteHalf, Duration), bench.Millis),
			bytesCell(r.Median(n, WorkloadDeleteHalf, FreedBytes)), strings.TrimSpace(strings.Join(notes, " ")))
		t.Row(row...)
	}
}

func shares() string {
	var parts []string
	for _, pct := range TruncateShares {
		parts = append(parts, fmt.Sprintf("%d %%", pct))
	}
	return strings.Join(parts, ", ")
}

func catchUpSection(rep *bench.Report, r *Results) {
	wl := WorkloadCatchUp
	if len(taking(r, wl)) == 0 {
		return
	}
	s := rep.Section("Follower catch-up")
	s.Para("%d records of %d bytes appended into a fresh log as a follower receives them: fetches of %d batches of %d records, each batch appended at the offset it came with, one Sync per fetch (the raw files write a fetch as one write and fdatasync it). Latency is one fetch's.",
		r.Config.Records, r.Config.RecordBytes, fetchBatches, fetchBatchRecords)
	t := s.Table("subject", "records/s", "MB/s", "fetch p99", "device WA", "× raw", "× raw-overwrite", "notes").Left(7)
	for _, n := range taking(r, wl) {
		sp := func(m Metric, f func(float64) string) string { return bench.SpreadText(r.Spread(n, wl, m), f) }
		t.Row(n, sp(RecordsPerSecond, bench.Rate), sp(BytesPerSecond, bench.MB), sp(P99, bench.Millis), sp(WriteAmplification, amp),
			ratioCell(r, n, RawName, wl), ratioCell(r, n, RawOverwriteName, wl), failures(r, n, wl))
	}
}

// readRepsSection shows the cold reads repetition by repetition, since a
// target asks segment to be ahead of badger in every one.
func readRepsSection(rep *bench.Report, r *Results) {
	subjects := taking(r, WorkloadRead)
	if len(subjects) == 0 || r.Config.Reps < 2 {
		return
	}
	s := rep.Section("Sequential read, repetition by repetition")
	s.Para("records/s of each cold read; every repetition visits every subject in turn, so a column was measured within minutes.")
	head := []string{"subject"}
	for i := 1; i <= r.Config.Reps; i++ {
		head = append(head, fmt.Sprintf("rep %d", i))
	}
	t := s.Table(head...)
	for _, n := range subjects {
		row := []string{n}
		for _, smp := range r.Samples(n, WorkloadRead) {
			row = append(row, bench.Rate(RecordsPerSecond(smp)))
		}
		t.Row(row...)
	}
}
