package sim

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sim is one run: the cluster, its clients, the network, the clock and the
// queue of events, all on the goroutine that calls Run.
type Sim struct {
	opts     Options
	now      int64 // ticks (ms) since the start
	seq      uint64
	queue    eventQueue
	net      *network
	faults   *rand.Rand
	work     *rand.Rand
	brokers  []*broker // by id-1
	clients  []client
	admin    *admin
	checks   *checks
	stats    Stats
	trace    hash.Hash64
	traceBuf []byte
	phase    string
	log      []string // the last lines of the trace, for a failure report
	stopped  bool
}

// Stats are what a run did.
type Stats struct {
	Events, Messages, Dropped, Duplicated int
	LostBatches, Torn                     int
	Faults                                map[string]int
	AckedAll, AckedOne                    int
	Reads                                 int
	Ticks                                 int64
}

// Violation is a property a run broke.
type Violation struct {
	Anomaly string // Jepsen's name where it has one: lost-write, duplicate, ...
	Tick    int64
	Detail  string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s at %dms: %s", v.Anomaly, v.Tick, v.Detail)
}

// Result is the outcome of a run.
type Result struct {
	Options    Options
	Violations []Violation
	Stats      Stats
	TraceHash  uint64
	Trace      []string // the last trace lines, when there is a violation
}

// Failed reports whether the run broke a property.
func (r Result) Failed() bool { return len(r.Violations) > 0 }

// Replay is the command that replays the run.
func (r Result) Replay() string {
	o := r.Options
	cmd := "go run ./cmd/sim"
	if o.Mutation != "" {
		cmd = "go run -tags mutations ./cmd/sim"
	}
	cmd += fmt.Sprintf(" -seed %d", o.Seed)
	if o.Profile == ProfileLong {
		cmd += " -long"
	}
	if o.Flags != "" {
		cmd += " " + o.Flags
	}
	if o.Scenario != "" {
		cmd += " -scenario " + o.Scenario
	}
	if o.Mutation != "" {
		cmd += " -mutation " + o.Mutation
	}
	return cmd
}

// epoch is the simulated wall clock at tick 0.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *Sim) time() time.Time { return epoch.Add(time.Duration(s.now) * time.Millisecond) }

// sub is the random stream of one component.
func (s *Sim) sub(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(s.opts.Seed, stream))
}

// Run runs one schedule: the cluster starts, the workload and the faults
// run for the safety phase, then everything is healed and the liveness
// phase runs until the cluster has converged, or its bound passes.
func Run(o Options) Result { return runSim(o).result() }

// runSim runs one schedule and returns the simulation as it ended.
func runSim(o Options) *Sim {
	o.applySettings()
	s := &Sim{opts: o, trace: fnv.New64a(), stats: Stats{Faults: map[string]int{}}}
	s.net = newNetwork(s, s.sub(subSeedNet))
	s.faults = s.sub(subSeedFaults)
	s.work = s.sub(subSeedWorkload)
	s.checks = newChecks(s)
	s.phase = "safety"
	for id := int32(1); id <= int32(o.Brokers); id++ {
		s.net.nodes = append(s.net.nodes, id)
		b := newBroker(s, id)
		s.brokers = append(s.brokers, b)
	}
	s.startWorkload()
	for _, b := range s.brokers {
		b.start()
	}
	s.scheduleFaults()
	for !s.stopped && s.now < o.SafetyTicks && s.step() {
		s.stats.Events++
	}
	if !s.stopped {
		s.heal()
		deadline := s.now + o.LivenessTicks
		next := s.now
		for !s.stopped && s.now < deadline && s.step() {
			s.stats.Events++
			if s.now >= next {
				next = s.now + 50
				if s.converged() {
					break
				}
			}
		}
		if !s.stopped && !s.converged() {
			s.violate("liveness", "not converged %dms after healing: %s", o.LivenessTicks, s.notConverged())
		}
	}
	if !s.stopped {
		s.checks.final()
	}
	s.stats.Ticks = s.now
	return s
}

func (s *Sim) result() Result {
	r := Result{Options: s.opts, Violations: s.checks.violations, Stats: s.stats, TraceHash: s.trace.Sum64()}
	if r.Failed() {
		r.Trace = s.log
	}
	return r
}

// violate records a broken property and stops the run.
func (s *Sim) violate(anomaly, format string, args ...any) {
	v := Violation{Anomaly: anomaly, Tick: s.now, Detail: fmt.Sprintf(format, args...)}
	s.checks.violations = append(s.checks.violations, v)
	s.tracef("VIOLATION %s", v)
	s.stopped = true
}

// heal ends the safety phase: the network heals, faults stop, every
// broker down restarts.
func (s *Sim) heal() {
	s.phase = "liveness"
	s.tracef("heal everything")
	s.net.healAll()
	s.net.healed = true
	for _, b := range s.brokers {
		b.disk.full = false
		b.disk.fail = false
		b.slowSync = false
		if !b.up && !b.lost {
			b.start()
		}
	}
}

func (s *Sim) traceEvent(e *event) {
	// The bytes of fmt's "%d %s;", without its cost on every event.
	b := strconv.AppendInt(s.traceBuf[:0], e.tick, 10)
	b = append(append(append(b, ' '), e.kind...), ';')
	s.trace.Write(b)
	s.traceBuf = b
}

// tracef writes a line to the trace hash and keeps the last lines.
func (s *Sim) tracef(format string, args ...any) {
	line := fmt.Sprintf("%6dms ", s.now) + fmt.Sprintf(format, args...)
	s.trace.Write([]byte(line))
	s.log = append(s.log, line)
	if len(s.log) > 400 {
		s.log = slices.Clone(s.log[200:])
	}
}

// FormatFailure is the report of a failed run: the seed and options first,
// the replay command, the violations and the end of the trace.
func FormatFailure(r Result, traceLines int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "options: %s\nreplay: %s\n", r.Options, r.Replay())
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "violation: %s\n", v)
	}
	if traceLines > 0 {
		t := r.Trace
		if len(t) > traceLines {
			t = t[len(t)-traceLines:]
		}
		b.WriteString("trace (last lines):\n")
		for _, l := range t {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}
