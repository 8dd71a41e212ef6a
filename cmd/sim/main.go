// Command sim runs the deterministic cluster simulator (package sim) over
// many seeds, or replays one.
//
//	go run ./cmd/sim -seeds 10000                 # schedules 1..10000, a progress bar, a summary
//	go run ./cmd/sim -seed 73                     # replay one, with its trace on a failure
//	go run ./cmd/sim -seeds 500 -brokers 5 -faults crash,partition
//	go run -tags mutations ./cmd/sim -seeds 100000 -report results/sim.md
//
// Schedules run -workers at a time (GOMAXPROCS by default): each is its
// own deterministic world, so this changes no schedule, only wall time.
//
// -report writes the figures of results/sim.md: the schedules, their
// violations, simulated time against wall time, faults by kind, and, in a
// build with the mutations tag, how soon each named scenario's mutation
// is caught.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/sim"
)

func main() {
	seeds := flag.Int("seeds", 1000, "schedules to run, from -first")
	first := flag.Uint64("first", 1, "first seed of -seeds")
	seed := flag.Uint64("seed", 0, "replay this seed only")
	long := flag.Bool("long", false, "the long profile: longer schedules with more work")
	brokers := flag.Int("brokers", 0, "override the broker count (1..5)")
	syncPolicy := flag.String("sync", "", "override the partitions' sync policy: always, interval, never")
	voters := flag.Int("voters", 0, "override the controller voters (brokers 1..N; the others follow the metadata log)")
	faults := flag.String("faults", "", "fault kinds to keep, comma separated: crash,partition,stall,disk,shutdown,net (empty: as the seed draws; none: no faults)")
	eng := flag.String("engine", "", "override the partitions' engine: model (the crash-model log) or segment (the product's, on the crashable MemFS)")
	scenario := flag.String("scenario", "", "tune the options for a named scenario: "+scenarioNames())
	mutation := flag.String("mutation", "", "switch a protection off (a build with -tags mutations): "+strings.Join(sim.Mutations(), ","))
	report := flag.String("report", "", "write the figures to this markdown file")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "schedules run at once (each is deterministic on its own)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()

	// A schedule's heap is small and short-lived, and the collector took
	// a fifth of a run at the default of 100: trade memory for it, unless
	// the user set GOGC.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fatalf("-cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatalf("-cpuprofile: %v", err)
		}
		defer pprof.StopCPUProfile()
	}

	if *eng != "" && *eng != sim.EngineModel && *eng != sim.EngineSegment {
		fatalf("-engine %s: want %s or %s", *eng, sim.EngineModel, sim.EngineSegment)
	}
	if *mutation != "" && !slices.Contains(sim.Mutations(), *mutation) {
		fatalf("-mutation %s: not in this build (build with -tags mutations): %v", *mutation, sim.Mutations())
	}
	profile := sim.ProfileCI
	if *long {
		profile = sim.ProfileLong
	}
	options := func(s uint64) sim.Options {
		o := sim.Derive(s, profile)
		if *scenario != "" {
			sc, ok := findScenario(*scenario)
			if !ok {
				fatalf("-scenario %s: none such (%s)", *scenario, scenarioNames())
			}
			o = sim.ScenarioOptions(sc, s, false)
		}
		if *syncPolicy != "" {
			p, err := engine.ParseSyncPolicy(*syncPolicy)
			if err != nil {
				fatalf("-sync: %v", err)
			}
			o.Sync = p
		}
		if *voters > 0 {
			o.Voters = *voters
		}
		if *eng != "" {
			o.Engine = *eng
		}
		if *brokers > 0 {
			o.Brokers = *brokers
			o.ReplicationFactor = min(o.ReplicationFactor, o.Brokers)
			o.MinISR = min(o.MinISR, o.ReplicationFactor)
		}
		applyFaults(&o, *faults)
		o.Mutation = *mutation
		o.Flags = overrides()
		return o
	}
	if *seed != 0 {
		o := options(*seed)
		fmt.Println("options:", o)
		r := sim.Run(o)
		if r.Failed() {
			fmt.Print(sim.FormatFailure(r, 200))
			exitFlushed(1)
		}
		fmt.Printf("ok: %d events, %.1fs simulated, trace %016x\n", r.Stats.Events, float64(r.Stats.Ticks)/1000, r.TraceHash)
		return
	}
	load := [2]string{loadAverage()}
	sum := runMany(*first, *seeds, *workers, options)
	fmt.Print(sum.text())
	if *report != "" {
		var caught []catch
		if len(sim.Mutations()) > 1 {
			caught = catchMutations(*seeds, *workers)
		}
		load[1] = loadAverage()
		if err := writeReport(*report, sum, caught, load); err != nil {
			fatalf("%v", err)
		}
		fmt.Println("wrote", *report)
	}
	if len(sum.failures) > 0 {
		exitFlushed(1)
	}
}

// summary is what a batch of schedules did.
type summary struct {
	schedules int
	simMs     int64
	wall      time.Duration
	events    int
	faults    map[string]int
	acked     [2]int
	reads     int
	failures  []sim.Result
	workers   int
	cpu       time.Duration // the process's user and system time over the run
}

// runMany runs schedules first..first+n-1 on workers goroutines. Each
// schedule is its own deterministic world, so running several at once
// changes no schedule; the summary adds them up, failures in seed order.
func runMany(first uint64, n, workers int, options func(uint64) sim.Options) summary {
	s := summary{faults: map[string]int{}, workers: max(workers, 1)}
	bar := progressbar.NewOptions(n, progressbar.OptionSetDescription("schedules"), progressbar.OptionShowCount(),
		progressbar.OptionSetWriter(os.Stderr), progressbar.OptionThrottle(200*time.Millisecond))
	start, cpu0 := time.Now(), cpuTime()
	next := make(chan uint64)
	var wg sync.WaitGroup
	var mu sync.Mutex // s and the progress bar
	for range s.workers {
		wg.Go(func() {
			for seed := range next {
				r := sim.Run(options(seed))
				mu.Lock()
				s.add(r)
				_ = bar.Add(1)
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- first + uint64(i)
	}
	close(next)
	wg.Wait()
	s.wall, s.cpu = time.Since(start), cpuTime()-cpu0
	_ = bar.Finish()
	fmt.Fprintln(os.Stderr)
	slices.SortFunc(s.failures, func(a, b sim.Result) int { return cmp.Compare(a.Options.Seed, b.Options.Seed) })
	return s
}

func (s *summary) add(r sim.Result) {
	s.schedules++
	s.simMs += r.Stats.Ticks
	s.events += r.Stats.Events
	s.acked[0] += r.Stats.AckedAll
	s.acked[1] += r.Stats.AckedOne
	s.reads += r.Stats.Reads
	for k, v := range r.Stats.Faults {
		s.faults[k] += v
	}
	s.faults["message-dropped"] += r.Stats.Dropped
	s.faults["message-duplicated"] += r.Stats.Duplicated
	s.faults["unsynced-batch-lost"] += r.Stats.LostBatches
	s.faults["torn-write"] += r.Stats.Torn
	if r.Failed() {
		s.failures = append(s.failures, r)
		fmt.Fprintf(os.Stderr, "\n%s", sim.FormatFailure(r, 0))
	}
}

func (s summary) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedules: %d, violations: %d\n", s.schedules, len(s.failures))
	fmt.Fprintf(&b, "simulated: %s in %s of wall time on %d workers (%.0fx), %s of CPU time (%.0fx), %d events\n",
		time.Duration(s.simMs)*time.Millisecond, s.wall.Round(time.Millisecond), s.workers, float64(s.simMs)/float64(s.wall.Milliseconds()+1),
		s.cpu.Round(time.Millisecond), float64(s.simMs)/float64(s.cpu.Milliseconds()+1), s.events)
	fmt.Fprintf(&b, "acknowledged batches: %d acks=all, %d acks=1; records read by consumers: %d\n", s.acked[0], s.acked[1], s.reads)
	b.WriteString("faults injected:\n")
	for _, k := range sortedKeys(s.faults) {
		fmt.Fprintf(&b, "  %-22s %d\n", k, s.faults[k])
	}
	for _, f := range s.failures {
		fmt.Fprintf(&b, "FAILED: %s\n  replay: %s\n", f.Violations[0], f.Replay())
	}
	return b.String()
}

func applyFaults(o *sim.Options, kinds string) {
	if kinds == "" {
		return
	}
	keep := map[string]bool{}
	for _, k := range strings.Split(kinds, ",") {
		keep[strings.TrimSpace(k)] = true
	}
	if !keep["crash"] {
		o.CrashEvery = 0
	} else if o.CrashEvery == 0 {
		o.CrashEvery = 1500
	}
	if !keep["partition"] {
		o.PartitionEvery = 0
	} else if o.PartitionEvery == 0 {
		o.PartitionEvery = 1500
	}
	if !keep["stall"] {
		o.StallEvery = 0
	} else if o.StallEvery == 0 {
		o.StallEvery = 1000
	}
	if !keep["disk"] {
		o.DiskEvery = 0
	} else if o.DiskEvery == 0 {
		o.DiskEvery = 1000
	}
	o.ControlledStop = keep["shutdown"]
	if !keep["net"] {
		o.DropPct, o.DupPct = 0, 0
	}
}

func findScenario(name string) (sim.Scenario, bool) {
	for _, sc := range sim.Scenarios {
		if sc.Name == name {
			return sc, true
		}
	}
	return sim.Scenario{}, false
}

func scenarioNames() string {
	var names []string
	for _, sc := range sim.Scenarios {
		names = append(names, sc.Name)
	}
	return strings.Join(names, ",")
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sim: "+format+"\n", args...)
	os.Exit(2)
}

// overrides are the flags given that change a schedule's options, as a
// replay must repeat them.
func overrides() string {
	var out []string
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "brokers", "voters", "sync", "faults", "engine":
			out = append(out, "-"+f.Name+" "+f.Value.String())
		}
	})
	return strings.Join(out, " ")
}

// exitFlushed exits with code after writing out the CPU profile, if one
// is being taken (os.Exit runs no deferred call): a failing run is the
// one most worth profiling.
func exitFlushed(code int) {
	pprof.StopCPUProfile()
	os.Exit(code)
}
