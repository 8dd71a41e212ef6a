// Package reassign measures a partition reassignment under load (issue
// 25's target): four brokers, a topic of three partitions on the first
// three filled to Bytes, then every partition moved so that broker 1's
// replicas go to broker 4 (KIP-455: the new replica is added, catches up,
// joins the ISR, and the old one is removed), while a closed-loop acks=all
// producer measures the throughput before and during the move and a
// tracked idempotent producer (bench/load) gives every acknowledgement's
// time and, read back at the end, what was lost or duplicated. The move is
// throttled as an operator would (kafka-reassign-partitions --throttle,
// admin.SetThrottle): at Throttle times the rate the topic grew at on
// disk before the move, so that the new replica copies the backlog at a
// pace that leaves the producers most of the machine and still outruns
// the partitions' growth.
package reassign

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/admin"
	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/broker/harness"
)

// The shape of the run.
const (
	Topic      = "reassign"
	Partitions = 3
	Brokers    = 4
	MinISR     = 2
)

// Defaults for zero Config fields.
const (
	DefaultBytes       = 1 << 30
	DefaultRecordBytes = 1024
	DefaultRate        = 300
	DefaultWindow      = 10 * time.Second
	DefaultThrottle    = 1.5
)

// Targets (issue 25).
const (
	TargetLongestGap      = 1.0 // seconds between two acknowledgements of a partition during the move
	TargetThroughputRatio = 0.5 // during the move over before it
)

// Config is one run.
type Config struct {
	bench.Servers
	Engines []string
	// Bytes is the topic's size when the move starts.
	Bytes int64
	// RecordBytes is the closed-loop producer's record value size.
	RecordBytes int
	// Rate is the tracked producer's records per second.
	Rate float64
	// Window is how long the throughput before the move is measured.
	Window time.Duration
	// Throttle is the replication throttle of the move, as a multiple of
	// the closed loop's bytes a second before it; negative: none.
	Throttle float64
}

func (c *Config) defaults() {
	c.Servers.Defaults()
	if c.Bytes <= 0 {
		c.Bytes = DefaultBytes
	}
	if c.RecordBytes <= 0 {
		c.RecordBytes = DefaultRecordBytes
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Throttle == 0 {
		c.Throttle = DefaultThrottle
	}
}

// Run is one engine's move.
type Run struct {
	Engine string `json:"engine"`
	Error  string `json:"error,omitempty"`
	// Moved is the topic's size when the move started, in bytes of record
	// values acknowledged; Stored is what broker 1 stored of it (batches as
	// written: franz-go compresses), and StoredRate how fast that grew over
	// the window before the move, in bytes a second: what a throttle
	// counts.
	Moved      int64   `json:"moved_bytes"`
	Stored     int64   `json:"stored_bytes,omitempty"`
	StoredRate float64 `json:"stored_per_s,omitempty"`
	// Move is the time from the request to every partition on its new
	// replicas with a full ISR, in seconds.
	Move float64 `json:"move_s"`
	// Before and During are the closed-loop producer's acknowledged
	// records per second.
	Before float64 `json:"before_per_s"`
	During float64 `json:"during_per_s"`
	// LongestGap is the longest time between two acknowledgements of one
	// partition by the tracked producer during the move, in seconds.
	LongestGap float64          `json:"longest_gap_s"`
	Audit      load.AuditResult `json:"audit"`
	// Replicas are the partitions' replicas after the move.
	Replicas [][]int32 `json:"replicas"`
	// Throttle is the move's replication throttle in bytes a second, 0
	// for none.
	Throttle int64 `json:"throttle_bytes_per_s,omitempty"`
	// GapPartition, GapFrom and GapTo are where the longest gap was, its
	// ends in seconds since the request; Timeline is every change of the
	// partitions' metadata seen during the move (polled every 50 ms).
	// GapBefore is the longest gap in the window before the move: what
	// the load alone does, the baseline of LongestGap.
	GapBefore    float64 `json:"gap_before_s"`
	GapPartition int32   `json:"gap_partition"`
	// Request is when the reassignment was asked for, to read the gap
	// against a machine's own traces.
	Request  time.Time `json:"request"`
	GapFrom  float64   `json:"gap_from_s"`
	GapTo    float64   `json:"gap_to_s"`
	Timeline []Change  `json:"timeline,omitempty"`
}

// Ratio is the throughput during the move over before it.
func (r Run) Ratio() float64 { return bench.Div(r.During, r.Before) }

// Result is the run of every engine.
type Result struct {
	bench.Facts
	Config Settings      `json:"config"`
	Runs   []Run         `json:"runs"`
	Checks []bench.Check `json:"checks"`
}

// Settings is what the report says of the Config.
type Settings struct {
	Bytes       int64   `json:"bytes"`
	RecordBytes int     `json:"record_bytes"`
	Rate        float64 `json:"rate"`
	Window      float64 `json:"window_s"`
	Sync        string  `json:"sync"`
	Throttle    float64 `json:"throttle"`
}

// Measure moves a filled topic on each engine.
func Measure(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	res := &Result{Facts: bench.Begin(cfg.Dir, cfg.Command), Config: Settings{Bytes: cfg.Bytes, RecordBytes: cfg.RecordBytes,
		Rate: cfg.Rate, Window: cfg.Window.Seconds(), Sync: cfg.Sync, Throttle: cfg.Throttle}}
	res.Setup = cfg.Setup
	for _, eng := range cfg.Engines {
		r := moveOn(ctx, cfg, eng)
		if r.Error != "" {
			fmt.Fprintf(cfg.Log, "%s: FAILED: %s\n", eng, r.Error)
		} else {
			fmt.Fprintf(cfg.Log, "%s: moved %s in %s; %s records/s before, %s during (%.2fx); longest gap %s; %d acknowledged, %d lost, %d duplicated\n",
				eng, bench.Bytes(r.Moved), secs(r.Move), bench.Rate(r.Before), bench.Rate(r.During), r.Ratio(), secs(r.LongestGap),
				r.Audit.Acked, r.Audit.Lost, r.Audit.Duplicated)
		}
		res.Runs = append(res.Runs, r)
		if ctx.Err() != nil {
			break
		}
	}
	res.End()
	res.judge()
	return res, ctx.Err()
}

func moveOn(ctx context.Context, cfg Config, engine string) (out Run) {
	out.Engine = engine
	fail := func(err error) Run {
		out.Error = err.Error()
		return out
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := harness.StartCluster(sctx, harness.ClusterConfig{Bin: cfg.Bin, Engine: engine, Brokers: Brokers,
		Dir: filepath.Join(cfg.Dir, "reassign-"+engine), Sync: cfg.Sync, Log: cfg.ServerLog,
		Args: append([]string{"-min-insync-replicas", fmt.Sprint(MinISR)}, cfg.Args...)})
	if err != nil {
		return fail(err)
	}
	defer c.Close()
	cl, err := c.Client(kgo.MetadataMinAge(50 * time.Millisecond))
	if err != nil {
		return fail(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := createOnFirstThree(sctx, cl); err != nil {
		return fail(err)
	}
	if err := c.WaitISR(sctx, Topic, 3); err != nil {
		return fail(err)
	}

	p, err := startPump(ctx, c.Seeds(), cfg.RecordBytes)
	if err != nil {
		return fail(err)
	}
	defer p.stop()
	for p.ackedBytes() < cfg.Bytes {
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return fail(err)
		}
		if err := p.err(); err != nil {
			return fail(fmt.Errorf("filling the topic: %w", err))
		}
	}
	tracked, err := load.StartTracked(ctx, load.TrackedConfig{Client: load.Client{Brokers: c.Seeds()}, Topic: Topic,
		Partitions: Partitions, Rate: cfg.Rate, RecordBytes: 100})
	if err != nil {
		return fail(err)
	}
	stopTracked := sync.OnceValue(func() load.TrackedResult { return tracked.Stop(30 * time.Second) })
	defer stopTracked()
	stored0, err := storedBytes(ctx, adm)
	if err != nil {
		return fail(err)
	}
	from := time.Now()
	if err := pause(ctx, cfg.Window); err != nil {
		return fail(err)
	}
	stored1, err := storedBytes(ctx, adm)
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	out.Request = start
	out.Before = p.rate(from, start)
	out.GapBefore = load.LongestGap(tracked.Writes(0), nil, from, start).Seconds()
	out.Moved = p.ackedBytes()
	out.Stored = stored1
	out.StoredRate = float64(stored1-stored0) / start.Sub(from).Seconds()

	if cfg.Throttle > 0 {
		out.Throttle = int64(cfg.Throttle * out.StoredRate)
		moves := map[int32][]int32{}
		for i := range Partitions {
			moves[int32(i)] = target(i)
		}
		if err := admin.SetThrottle(ctx, adm, Topic, moves, out.Throttle); err != nil {
			return fail(err)
		}
	}
	w := startWatch(ctx, adm, start, 50*time.Millisecond)
	if err := moveOffBroker1(ctx, adm); err != nil {
		w.stop()
		return fail(err)
	}
	err = waitMoved(ctx, adm)
	out.Timeline = w.stop()
	if err != nil {
		return fail(err)
	}
	end := time.Now()
	out.Move = end.Sub(start).Seconds()
	out.During = p.rate(start, end)
	gap := load.WidestGap(tracked.Writes(0), nil, start, end)
	out.LongestGap = gap.Length().Seconds()
	out.GapPartition, out.GapFrom, out.GapTo = gap.Partition, gap.From.Sub(start).Seconds(), gap.To.Sub(start).Seconds()
	if out.Throttle > 0 {
		if err := admin.RemoveThrottle(ctx, adm, Topic); err != nil {
			return fail(err)
		}
	}
	p.stop()
	tr := stopTracked()
	actx, acancel := context.WithTimeout(ctx, 5*time.Minute)
	defer acancel()
	if out.Audit, err = load.Audit(actx, load.Client{Brokers: c.Seeds()}, Topic, tr.Acked); err != nil {
		return fail(fmt.Errorf("reading back: %w", err))
	}
	m, err := adm.Metadata(actx, Topic)
	if err != nil {
		return fail(err)
	}
	for _, pd := range m.Topics[Topic].Partitions.Sorted() {
		out.Replicas = append(out.Replicas, slices.Clone(pd.Replicas))
	}
	return out
}

// storedBytes is what broker 1 (a replica of every partition) stores of
// the topic, as DescribeLogDirs reports it.
func storedBytes(ctx context.Context, adm *kadm.Client) (int64, error) {
	ds, err := adm.DescribeBrokerLogDirs(ctx, 1, kadm.TopicsSet{Topic: {0: {}, 1: {}, 2: {}}})
	if err == nil {
		err = ds.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("log dirs of broker 1: %w", err)
	}
	return ds.Size(), nil
}

// assignment is where each partition starts: brokers 1-3, leaders spread.
var assignment = [Partitions][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}

// createOnFirstThree creates the topic on brokers 1-3 (the fourth, which
// the move fills, holds nothing).
func createOnFirstThree(ctx context.Context, cl *kgo.Client) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = Topic, -1, -1
	for i, rs := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create %s: %w", Topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerrOf(t.ErrorCode); err != nil {
			return fmt.Errorf("create %s: %w", Topic, err)
		}
	}
	return nil
}

// target is each partition's replicas after the move: broker 1's place
// taken by broker 4.
func target(i int) []int32 {
	out := slices.Clone(assignment[i])
	out[slices.Index(out, 1)] = 4
	return out
}

func moveOffBroker1(ctx context.Context, adm *kadm.Client) error {
	var req kadm.AlterPartitionAssignmentsReq
	for i := range Partitions {
		req.Assign(Topic, int32(i), target(i))
	}
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("reassign: %w", err)
	}
	return res.Error()
}

// waitMoved waits until no reassignment is listed and the metadata shows
// every partition on its target with a full ISR.
func waitMoved(ctx context.Context, adm *kadm.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	for {
		ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{Topic: {0: {}, 1: {}, 2: {}}})
		if err == nil && len(ls) == 0 {
			m, merr := adm.Metadata(ctx, Topic)
			if merr == nil && moved(m) {
				return nil
			}
		}
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the move: %w", err)
		}
	}
}

func moved(m kadm.Metadata) bool {
	ps := m.Topics[Topic].Partitions
	if len(ps) != Partitions {
		return false
	}
	for i := range Partitions {
		p := ps[int32(i)]
		if !slices.Equal(p.Replicas, target(i)) || len(p.ISR) != len(p.Replicas) {
			return false
		}
	}
	return true
}

// pause is bench.Pause with ctx's error when it ends first.
func pause(ctx context.Context, d time.Duration) error {
	if !bench.Pause(ctx, d) {
		return ctx.Err()
	}
	return nil
}

func kerrOf(code int16) error { return kerr.ErrorForCode(code) }

func secs(s float64) string { return bench.Millis(s) }
