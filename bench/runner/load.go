package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/admin"
	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/workloads"
)

// The loads that run beside a round's steps (workloads.Pump and
// workloads.Track), and the steps that use them.

// loadTopic is the topic the loads run on: the cell's last, or the one
// produce and consume share.
func (st *steps) loadTopic() string {
	if t := st.lastTopic(); t != "" {
		return t
	}
	return Topic
}

func (st *steps) client() load.Client { return load.Client{Brokers: st.seeds} }

func (st *steps) startPump(ctx context.Context, p *workloads.Pump) error {
	if st.pump != nil {
		return errors.New("a load already runs")
	}
	pump, err := load.StartPump(ctx, st.client(), st.loadTopic(), p.RecordBytes, p.InFlight)
	if err != nil {
		return err
	}
	st.pump = pump
	st.stored, err = st.storedBytes(ctx)
	return err
}

func (st *steps) startTracked(ctx context.Context, t *workloads.Track) error {
	if st.tracked != nil {
		return errors.New("a tracked producer already runs")
	}
	parts, err := st.partitions(ctx)
	if err != nil {
		return err
	}
	if t.Read {
		if st.reader, err = load.StartReader(ctx, st.client(), st.loadTopic()); err != nil {
			return err
		}
	}
	st.tracked, err = load.StartTracked(ctx, load.TrackedConfig{Client: st.client(), Topic: st.loadTopic(),
		Partitions: parts, Rate: t.Rate, RecordBytes: t.RecordBytes})
	return err
}

// partitions is how many partitions the load topic has.
func (st *steps) partitions(ctx context.Context) (int32, error) {
	adm, cl, err := st.adminClient()
	if err != nil {
		return 0, err
	}
	defer cl()
	td, err := adm.ListTopics(ctx, st.loadTopic())
	if err != nil {
		return 0, err
	}
	d := td[st.loadTopic()]
	if d.Err != nil {
		return 0, d.Err
	}
	return int32(len(d.Partitions)), nil
}

func (st *steps) adminClient() (*kadm.Client, func(), error) {
	if st.cluster == nil {
		return nil, nil, errors.New("no cluster")
	}
	cl, err := st.cluster.Client()
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// loadFigures are the figures of the running loads over a step from
// start, when the group load had sent requests: see workloads.Pump,
// workloads.Track and workloads.Groups.
func (st *steps) loadFigures(ctx context.Context, start time.Time, requests int64) (map[string]float64, error) {
	end := time.Now()
	figs := map[string]float64{}
	if st.groups != nil {
		figs["group_requests_per_s"] = float64(st.groupRequests()-requests) / end.Sub(start).Seconds()
	}
	if st.pump != nil {
		figs["load_records_per_s"] = st.pump.Rate(start, end)
		if st.cluster != nil {
			stored, err := st.storedBytes(ctx)
			if err != nil {
				return nil, err
			}
			figs["stored_per_s"] = float64(stored-st.stored) / end.Sub(start).Seconds()
			st.stored, st.storedRate = stored, figs["stored_per_s"]
		}
	}
	if st.tracked != nil {
		ws := st.tracked.Writes(0)
		if !st.faultAt.IsZero() {
			figs["gap_since_fault_s"] = load.LongestGap(ws, nil, st.faultAt, end).Seconds()
		}
		g := load.WidestGap(ws, nil, start, end)
		figs["longest_gap_s"] = g.Length().Seconds()
		figs["gap_partition"] = float64(g.Partition)
		figs["gap_from_s"], figs["gap_to_s"] = g.From.Sub(start).Seconds(), g.To.Sub(start).Seconds()
	}
	return figs, nil
}

// storedBytes is the size of one copy of the load topic on the brokers'
// disks: what every broker stores of it over its replication factor.
func (st *steps) storedBytes(ctx context.Context) (int64, error) {
	if st.cluster == nil {
		return 0, nil
	}
	adm, closeCl, err := st.adminClient()
	if err != nil {
		return 0, err
	}
	defer closeCl()
	topic := st.loadTopic()
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		return 0, err
	}
	td := m.Topics[topic]
	if td.Err != nil || len(td.Partitions) == 0 {
		return 0, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	rf := len(td.Partitions[0].Replicas)
	all, err := adm.DescribeAllLogDirs(ctx, partitionSet(td))
	if err != nil {
		return 0, fmt.Errorf("log dirs: %w", err)
	}
	var size int64
	for _, ds := range all {
		if err := ds.Error(); err != nil {
			return 0, fmt.Errorf("log dirs: %w", err)
		}
		size += ds.Size()
	}
	return size / int64(max(rf, 1)), nil
}

// fill waits until the pump had f.Bytes acknowledged.
func (st *steps) fill(ctx context.Context, f *workloads.Fill) error {
	if st.pump == nil {
		return errors.New("fill needs a load")
	}
	for st.pump.AckedBytes() < f.Bytes {
		if err := st.pump.Err(); err != nil {
			return err
		}
		if !bench.Pause(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

func pause(ctx context.Context, d time.Duration) error {
	if !bench.Pause(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// reassign moves the load topic's replicas (see workloads.Reassign).
func (st *steps) reassign(ctx context.Context, prefix string, r *workloads.Reassign) error {
	adm, closeCl, err := st.adminClient()
	if err != nil {
		return err
	}
	defer closeCl()
	topic := st.loadTopic()
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		return err
	}
	set := partitionSet(m.Topics[topic])
	targets := map[int32][]int32{}
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range m.Topics[topic].Partitions.Sorted() {
		if i := slices.Index(p.Replicas, r.From); i >= 0 {
			target := slices.Clone(p.Replicas)
			target[i] = r.To
			targets[p.Partition] = target
			req.Assign(topic, p.Partition, target)
		}
	}
	figs := map[string]float64{"stored_bytes": float64(st.stored)}
	if st.pump != nil {
		figs["moved_bytes"] = float64(st.pump.AckedBytes())
	}
	if r.Throttle > 0 {
		rate := int64(r.Throttle * st.storedRate)
		if err := admin.SetThrottle(ctx, adm, topic, targets, rate); err != nil {
			return err
		}
		figs["throttle_bytes_per_s"] = float64(rate)
	}
	st.set(prefix, figs)
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("reassign: %w", err)
	}
	if err := awaitMoved(ctx, adm, set, targets); err != nil {
		return err
	}
	if r.Throttle > 0 {
		return admin.RemoveThrottle(ctx, adm, topic)
	}
	return nil
}

// partitionSet is every partition of a topic.
func partitionSet(td kadm.TopicDetail) kadm.TopicsSet {
	set := kadm.TopicsSet{}
	for p := range td.Partitions {
		set.Add(td.Topic, p)
	}
	return set
}

// awaitMoved waits until no reassignment of the topic in set is listed and
// the metadata shows every partition on its target with a full ISR.
func awaitMoved(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet, targets map[int32][]int32) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	topic := set.Topics()[0]
	for {
		ls, err := adm.ListPartitionReassignments(ctx, set)
		if err == nil && len(ls) == 0 {
			if m, err := adm.Metadata(ctx, topic); err == nil && onTargets(m.Topics[topic], targets) {
				return nil
			}
		}
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the move: %w", err)
		}
	}
}

func onTargets(td kadm.TopicDetail, targets map[int32][]int32) bool {
	for p, target := range targets {
		pd, ok := td.Partitions[p]
		if !ok || !slices.Equal(pd.Replicas, target) || len(pd.ISR) != len(pd.Replicas) {
			return false
		}
	}
	return true
}

// groups is the cell's topic as a group consumers' workload.
func (st *steps) groupsOf() *load.Groups {
	return &load.Groups{Client: st.client(), Topic: Topic, Partitions: int(st.topology.Partitions), Poll: 2 * time.Millisecond}
}

func (st *steps) churn(ctx context.Context, prefix string, c *workloads.Churn) error {
	balancer := kgo.CooperativeStickyBalancer()
	switch c.Balancer {
	case "cooperative-sticky", "":
	case "range":
		balancer = kgo.RangeBalancer()
	default:
		return fmt.Errorf("balancer %q: want cooperative-sticky or range", c.Balancer)
	}
	res, err := st.groupsOf().Churn(ctx, c.Members, balancer)
	if err != nil {
		return err
	}
	st.set(prefix, map[string]float64{"moved": float64(res.Moved), "settle_s": res.Settle.Seconds()})
	return nil
}

func (st *steps) settle(ctx context.Context, prefix string, s *workloads.Settle) error {
	d, err := st.groupsOf().Settle(ctx, s.Members)
	if err != nil {
		return err
	}
	st.set(prefix, map[string]float64{"settle_s": d.Seconds()})
	return nil
}

func (st *steps) startGroups(ctx context.Context, g *workloads.Groups) error {
	if st.groups != nil {
		return errors.New("a group load already runs")
	}
	var err error
	st.groups, err = st.groupsOf().StartGroupLoad(ctx, g.Count, "committed", g.Heartbeat, g.Commit)
	return err
}

func (st *steps) groupRequests() int64 {
	if st.groups == nil {
		return 0
	}
	return st.groups.Requests()
}

// endLoads stops the loads when a round ends and reads back what the
// tracked producer was told.
func (st *steps) endLoads(ctx context.Context) error {
	if st.groups != nil {
		_, err := st.groups.Stop()
		st.groups = nil
		if err != nil {
			return fmt.Errorf("group load: %w", err)
		}
	}
	if st.pump != nil {
		st.pump.Stop()
		st.pump = nil
	}
	if st.tracked == nil {
		return nil
	}
	tr := st.tracked.Stop(30 * time.Second)
	st.tracked = nil
	actx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if st.cluster != nil && st.reader != nil {
		// A reading cell (the faults') reads back once every ISR is full.
		if err := st.cluster.WaitISR(actx, st.loadTopic(), len(st.cluster.Nodes())); err != nil {
			return fmt.Errorf("after the last round: %w", err)
		}
	}
	var polls load.Polls
	if st.reader != nil {
		polls = st.reader.Stop()
		st.reader = nil
	}
	a, err := load.Audit(actx, st.client(), st.loadTopic(), tr.Acked, polls)
	if err != nil {
		return fmt.Errorf("reading back: %w", err)
	}
	figs := map[string]float64{"acked": float64(a.Acked), "consumed": float64(a.Consumed),
		"lost": float64(a.Lost), "duplicated": float64(a.Duplicated), "misplaced": float64(a.Misplaced),
		"unacked": float64(tr.Failed), "anomalies": float64(a.Anomalies())}
	if polls != nil {
		figs["nonmonotonic"], figs["poll_skips"], figs["read_mismatches"] = float64(a.Nonmonotonic), float64(a.PollSkips), float64(a.ReadMismatches)
	}
	st.set("audit", figs)
	return nil
}
