package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minikafka/minikafka/sim"
)

// catch is how soon, and how often, a scenario's mutation was caught.
type catch struct {
	sc        sim.Scenario
	schedules int     // schedules run until the first violation (0: not caught)
	simHours  float64 // simulated time until then
	violation string
	replay    string
	// caught of the first rateOf schedules broke a property.
	caught, rateOf int
}

// rateSchedules is how many schedules of each scenario the catch rate is
// measured on.
const rateSchedules = 1000

// catchMutations runs each named scenario with its mutation on: its first
// rateSchedules schedules, counting those the checkers catch, and on up to
// limit schedules until the first catch.
func catchMutations(limit, workers int) []catch {
	out := make([]catch, len(sim.Scenarios))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for i := range next {
				out[i] = catchOne(sim.Scenarios[i], limit)
			}
		})
	}
	for i := range sim.Scenarios {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func catchOne(sc sim.Scenario, limit int) catch {
	c := catch{sc: sc, rateOf: min(limit, rateSchedules)}
	var ms int64
	for seed := uint64(1); seed <= uint64(limit); seed++ {
		if c.schedules > 0 && int(seed) > c.rateOf {
			break
		}
		r := sim.Run(sim.ScenarioOptions(sc, seed, true))
		if c.schedules == 0 {
			ms += r.Stats.Ticks
		}
		if !r.Failed() {
			continue
		}
		if int(seed) <= c.rateOf {
			c.caught++
		}
		if c.schedules == 0 {
			c.schedules, c.violation, c.replay = int(seed), r.Violations[0].String(), r.Replay()
		}
	}
	c.simHours = float64(ms) / 3.6e6
	return c
}

// loadAverage is the machine's one-minute load average, where Linux says
// it ("?" elsewhere): the figures of a shared machine depend on it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func writeReport(path string, s summary, caught []catch, load [2]string) error {
	var b strings.Builder
	b.WriteString("# Simulation results\n\n")
	fmt.Fprintf(&b, "Written by `go run -tags mutations ./cmd/sim -seeds %d -report %s` on %s (%d CPUs, %d schedules at once, %s; "+
		"load average %s at the start, %s at the end: the machine is shared, and wall times move with it).\n\n",
		s.schedules, path, time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), s.workers, runtime.Version(), load[0], load[1])
	b.WriteString("Every broker runs the project's own node shell (broker/node), partition layer (broker/partition, " +
		"in Manual mode), controller, raft and replication code; its partitions' logs are the crash model, or, " +
		"in a quarter of the seeds, the segment engine on a crashable in-memory filesystem. The simulator " +
		"supplies the network, the disk, the clock and the drivers that feed the shell its events. Seeds draw " +
		"the sync policy, non-voter brokers, retention and DeleteRecords, disk replacement and controlled " +
		"shutdowns; unclean election only in its scenario. In some seeds transactional producers (both " +
		"transaction versions) write through the product's transaction coordinators, read_committed " +
		"consumers read them, and copiers consume, transform and produce in transactions that commit " +
		"their input offsets through the product's group coordinators.\n\n")
	b.WriteString("## The real build\n\n")
	fmt.Fprintf(&b, "| schedules | violations | simulated time | wall time | simulated / wall | CPU time | simulated / CPU | events |\n|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	fmt.Fprintf(&b, "| %d | %d | %s | %s | %.0fx | %s | %.0fx | %d |\n\n", s.schedules, len(s.failures),
		(time.Duration(s.simMs) * time.Millisecond).Round(time.Second), s.wall.Round(time.Second),
		float64(s.simMs)/float64(s.wall.Milliseconds()+1), s.cpu.Round(time.Second), float64(s.simMs)/float64(s.cpu.Milliseconds()+1), s.events)
	fmt.Fprintf(&b, "Acknowledged batches: %d with acks=all, %d with acks=1; records read by consumers: %d.\n\n", s.acked[0], s.acked[1], s.reads)
	b.WriteString("Faults injected, by kind:\n\n| fault | count |\n|---|--:|\n")
	for _, k := range sortedKeys(s.faults) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, s.faults[k])
	}
	for _, f := range s.failures {
		fmt.Fprintf(&b, "\n- FAILED: %s — replay: `%s`\n", f.Violations[0], f.Replay())
	}
	if len(caught) > 0 {
		b.WriteString("\n## Mutations: each protection switched off\n\n")
		b.WriteString("| scenario | protection off | schedules to the first catch | caught in the first schedules | simulated hours until the first catch | first violation | replay |\n|---|---|--:|--:|--:|---|---|\n")
		for _, c := range caught {
			rate := fmt.Sprintf("%d of %d", c.caught, c.rateOf)
			if c.schedules == 0 {
				fmt.Fprintf(&b, "| %s | %s | not caught in %d | %s | %.2f | — | |\n", c.sc.Name, c.sc.Mutation, s.schedules, rate, c.simHours)
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %.4f | %s | `%s` |\n", c.sc.Name, c.sc.Mutation, c.schedules, rate, c.simHours,
				strings.ReplaceAll(c.violation, "|", "/"), c.replay)
		}
	}
	if len(caught) > 0 {
		var firsts []int
		for _, c := range caught {
			if c.schedules > 0 {
				firsts = append(firsts, c.schedules)
			}
		}
		slices.Sort(firsts)
		if len(firsts) > 0 {
			fmt.Fprintf(&b, "\nCaught: %d of %d scenarios; median schedules to the first catch: %d.\n", len(firsts), len(caught), firsts[len(firsts)/2])
		}
		if len(sim.Uncaught) == 0 {
			fmt.Fprintf(&b, "Every mutation of this build (%d) has a scenario above.\n", len(sim.Mutations()))
		} else {
			b.WriteString("\n## Mutations no schedule family catches yet\n\n| protection off | what a schedule needs to expose it |\n|---|---|\n")
			for _, u := range sim.Uncaught {
				fmt.Fprintf(&b, "| %s | %s |\n", u.Mutation, u.Why)
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
