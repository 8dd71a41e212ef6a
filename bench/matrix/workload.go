package matrix

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Workload is one point of the matrix: what every target is asked to do in
// a cell.
type Workload struct {
	// RecordBytes is the value size of every record.
	RecordBytes int `json:"record_bytes"`
	// InFlight bounds the records produced and not yet acknowledged: the
	// producer's concurrency (franz-go's MaxBufferedRecords, JetStream's
	// async publish window).
	InFlight int `json:"in_flight"`
	// Acks is "all" or "1".
	Acks string `json:"acks"`
	// Sync is the server's sync policy: "always" or "interval".
	Sync string `json:"sync"`
	// Producers splits InFlight over this many producer clients, each
	// with its own connection (0 or 1: one client). Many producers with a
	// record or two in flight each are many writers waiting on the same
	// partitions: the broker's group commit, not the client's batching,
	// decides how many fsyncs they cost.
	Producers int `json:"producers,omitempty"`
}

// Key names the workload in file names, JSON and ratio names:
// "1KiB-256-acks=all-sync=always", "1KiB-256p256-acks=all-sync=always".
func (w Workload) Key() string {
	p := ""
	if w.Producers > 1 {
		p = fmt.Sprintf("p%d", w.Producers)
	}
	return fmt.Sprintf("%s-%d%s-acks=%s-sync=%s", SizeName(w.RecordBytes), w.InFlight, p, w.Acks, w.Sync)
}

func (w Workload) String() string {
	p := ""
	if w.Producers > 1 {
		p = fmt.Sprintf(" over %d producers", w.Producers)
	}
	return fmt.Sprintf("%s records, %d in flight%s, acks=%s, sync=%s", SizeName(w.RecordBytes), w.InFlight, p, w.Acks, w.Sync)
}

// Clients is the number of producer clients.
func (w Workload) Clients() int { return max(1, w.Producers) }

// PerClient is the records in flight of each producer client.
func (w Workload) PerClient() int { return max(1, w.InFlight/w.Clients()) }

// SizeName writes a record size the way the report does: 100B, 1KiB, 16KiB.
func SizeName(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

// Slices of the matrix: which question a point answers.
const (
	SliceConcurrency = "concurrency" // in flight varies, 1 KiB, acks=all, sync=always
	SliceSize        = "size"        // record size varies at the reference concurrency
	SliceVariants    = "variants"    // acks and sync vary at the reference point
	SliceProducers   = "producers"   // the reference in-flight count spread over many producers
)

// Point is a workload and the slices it belongs to.
type Point struct {
	Workload
	Slices []string `json:"slices"`
	// Consume adds a tail read (a consumer at the log end while producing)
	// and a catch-up read (everything from the start after a restart with
	// the page cache evicted) to the cell.
	Consume bool `json:"consume"`
}

// In reports whether the point belongs to slice s.
func (p Point) In(s string) bool { return slices.Contains(p.Slices, s) }

// Reference is the point the single-figure charts and the amplification
// figures are read at: 1 KiB records, 256 in flight, acks=all,
// sync=always.
var Reference = Workload{RecordBytes: 1024, InFlight: 256, Acks: "all", Sync: "always"}

// Profile is a named plan: which points, how long each cell measures, how
// many repetitions, and how big the recovery data set is.
type Profile struct {
	Name string `json:"name"`
	// Reps is how many times every cell runs; repetitions interleave (every
	// cell of a repetition before the next repetition).
	Reps int `json:"reps"`
	// WarmUp is produced, not measured, at the start of every cell.
	WarmUp time.Duration `json:"warm_up_ns"`
	// Duration is the measured produce phase of a cell, and of its tail read.
	Duration time.Duration `json:"duration_ns"`
	// MaxPhaseBytes caps the payload of one produce phase, so that the fast
	// in-memory targets do not fill the machine's memory.
	MaxPhaseBytes int64 `json:"max_phase_bytes"`
	// Partitions of the benchmark topic.
	Partitions int32 `json:"partitions"`

	Concurrency []int      `json:"concurrency"`
	Sizes       []int      `json:"sizes"`
	Variants    []Workload `json:"variants"`
	// Producers are producer counts that share the reference in-flight
	// count (the group-commit question: many writers, one fsync).
	Producers []int `json:"producers"`
	// ConsumeSizes are the record sizes whose reference-concurrency point
	// also measures tail and catch-up reads.
	ConsumeSizes []int `json:"consume_sizes"`

	// RecoveryBytes is the payload produced before the kill -9 of the
	// recovery figure (sync=always); KillBytes the payload of the
	// durability check under sync=interval.
	RecoveryBytes int64 `json:"recovery_bytes"`
	KillBytes     int64 `json:"kill_bytes"`
}

// Profiles are the built-in plans. On the shared 2-core development
// machine the quick profile took 1.5 to 2.5 minutes and the full one 22
// (the run records its own duration). The full one runs 56 cells 3 times
// (4 s measured each, 18 of them with tail and catch-up reads), the kill -9
// recoveries with 1 GiB. The engines' certification (their conformance
// and crash suites) runs in CI, not here.
var Profiles = map[string]Profile{
	"quick": {
		Name: "quick", Reps: 1, WarmUp: 300 * time.Millisecond, Duration: 1500 * time.Millisecond,
		MaxPhaseBytes: 512 << 20, Partitions: 8,
		Concurrency:   []int{1, 256},
		Sizes:         []int{1024, 16384},
		Producers:     []int{16},
		Variants:      []Workload{{RecordBytes: 1024, InFlight: 256, Acks: "all", Sync: "interval"}},
		ConsumeSizes:  []int{1024},
		RecoveryBytes: 64 << 20, KillBytes: 16 << 20,
	},
	"full": {
		Name: "full", Reps: 3, WarmUp: time.Second, Duration: 4 * time.Second,
		MaxPhaseBytes: 1 << 30, Partitions: 8,
		Concurrency: []int{1, 16, 256, 1024},
		Sizes:       []int{100, 1024, 16384},
		Producers:   []int{16, 256},
		Variants: []Workload{
			{RecordBytes: 1024, InFlight: 256, Acks: "1", Sync: "always"},
			{RecordBytes: 1024, InFlight: 256, Acks: "all", Sync: "interval"},
			{RecordBytes: 1024, InFlight: 256, Acks: "1", Sync: "interval"},
		},
		ConsumeSizes:  []int{100, 1024, 16384},
		RecoveryBytes: 1 << 30, KillBytes: 128 << 20,
	},
}

// ProfileNames lists the built-in profiles, sorted.
func ProfileNames() []string { return slices.Sorted(maps.Keys(Profiles)) }

// Points expands the profile into its distinct workloads, each with the
// slices it belongs to, in the order the cells run: the concurrency sweep,
// then the size sweep, then the variants.
func (p Profile) Points() []Point {
	var pts []Point
	add := func(w Workload, slice string, consume bool) {
		for i := range pts {
			if pts[i].Workload == w {
				if !pts[i].In(slice) {
					pts[i].Slices = append(pts[i].Slices, slice)
				}
				pts[i].Consume = pts[i].Consume || consume
				return
			}
		}
		pts = append(pts, Point{Workload: w, Slices: []string{slice}, Consume: consume})
	}
	for _, c := range p.Concurrency {
		w := Reference
		w.InFlight = c
		add(w, SliceConcurrency, c == Reference.InFlight && slices.Contains(p.ConsumeSizes, w.RecordBytes))
	}
	for _, s := range p.Sizes {
		w := Reference
		w.RecordBytes = s
		add(w, SliceSize, slices.Contains(p.ConsumeSizes, s))
	}
	for _, n := range p.Producers {
		w := Reference
		w.Producers = n
		add(w, SliceProducers, false)
	}
	for _, w := range p.Variants {
		add(w, SliceVariants, false)
	}
	return pts
}

// Target kinds.
const (
	KindEngine    = "engine"    // mini-kafka's broker over one storage engine
	KindReference = "reference" // mini-kafka's broker over the memory engine: not durable
	KindPeer      = "peer"      // another server: kfake, NATS JetStream
)

// Applies reports whether a target of this name and kind runs workload w.
// Targets that ignore the acks or sync setting (the memory engine, kfake)
// run only acks=all, sync=always: under the variants they would repeat the
// same cell. JetStream has no leader-only acknowledgement, so it runs only
// acks=all.
func Applies(name, kind string, w Workload) bool {
	switch {
	case kind == KindReference || name == "kfake":
		return w.Acks == "all" && w.Sync == "always"
	case name == "nats":
		return w.Acks == "all" && w.Clients() == 1
	}
	return true
}

// DescribePlan says in a sentence which slices the profile runs.
func (p Profile) DescribePlan() string {
	var variants []string
	for _, v := range p.Variants {
		variants = append(variants, fmt.Sprintf("acks=%s sync=%s", v.Acks, v.Sync))
	}
	return fmt.Sprintf("concurrency sweep %v in flight at %s from one producer; the same %d in flight spread over %v producers; size sweep %v at %d in flight; variants (%s) at %s and %d in flight; tail and catch-up reads at %v",
		p.Concurrency, SizeName(Reference.RecordBytes), Reference.InFlight, p.Producers, sizeNames(p.Sizes), Reference.InFlight,
		strings.Join(variants, "; "), SizeName(Reference.RecordBytes), Reference.InFlight, sizeNames(p.ConsumeSizes))
}

func sizeNames(sizes []int) []string {
	out := make([]string, len(sizes))
	for i, s := range sizes {
		out[i] = SizeName(s)
	}
	return out
}
