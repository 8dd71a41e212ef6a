package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/workloads"
	"github.com/minikafka/minikafka/broker/harness"
)

// Bounds on the waits of a cluster step: far beyond any target, so that a
// broken cluster fails the repetition instead of hanging the run.
const (
	outcomeWait = time.Minute
	recoverWait = 2 * time.Minute
	// probeEvery is how often the probes ask a broker again: the
	// resolution of the figures they time.
	probeEvery = 2 * time.Millisecond
	// bulkBatch is how many topics one CreateTopics of a bulk creation
	// asks for.
	bulkBatch = 25
)

// producerOpts are the options of the clients that wait for a new topic
// or a restarted broker: metadata refreshed as often as franz-go allows
// (10 ms) and retries 5 ms apart, so that the client's own backoff (5 s
// between metadata refreshes, retries 250 ms and more apart, by default)
// does not hide the cluster's time.
func producerOpts(acks kgo.Acks) []kgo.Opt {
	return append(fastRetries(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DisableIdempotentWrite(),
		kgo.RecordDeliveryTimeout(outcomeWait),
		kgo.ProducerLinger(0),
		kgo.RequiredAcks(acks),
	)
}

// fastRetries: metadata refreshed as often as franz-go allows and
// retries 5 ms apart (see producerOpts).
func fastRetries() []kgo.Opt {
	return []kgo.Opt{
		kgo.MetadataMinAge(10 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }),
	}
}

// partition is one partition of a topic.
type partition struct {
	topic string
	index int32
}

func (st *steps) needCluster(kind string) (*harness.Cluster, error) {
	if st.cluster == nil {
		return nil, fmt.Errorf("%s needs a cluster (topology.brokers above 1)", kind)
	}
	return st.cluster, nil
}

func (st *steps) createTopic(ctx context.Context, prefix string, ct *workloads.CreateTopic) error {
	c, err := st.needCluster("create_topic")
	if err != nil {
		return err
	}
	if ct.Topics > 1 {
		return st.createBulk(ctx, c, ct)
	}
	topic := st.topicName()
	octx, cancel := context.WithTimeout(ctx, outcomeWait)
	defer cancel()
	start := time.Now()
	switch {
	case ct.Retry:
		attempts, err := createRetrying(octx, c, topic, ct)
		if err != nil {
			return err
		}
		st.set(prefix, map[string]float64{"attempts": float64(attempts)})
	case ct.Served:
		if err := st.createServed(octx, c, prefix, topic, ct, start); err != nil {
			return err
		}
	case len(ct.Assignment) > 0:
		if err := createAssigned(octx, c, topic, ct.Assignment); err != nil {
			return err
		}
		if _, err := c.WaitLeaders(octx, topic); err != nil {
			return err
		}
	default:
		if _, err := c.CreateTopic(octx, topic, ct.Partitions, ct.ReplicationFactor, nil); err != nil {
			return err
		}
	}
	st.created(topic)
	return nil
}

func (st *steps) topicName() string {
	st.seq++
	return fmt.Sprintf("t%d-%d", st.round, st.seq)
}

// created records a topic the later steps of the round use.
func (st *steps) created(topics ...string) {
	st.topics = append(st.topics, topics...)
}

// createRetrying sends CreateTopics to the running brokers in turn, 10 ms
// apart, until one accepts it (each forwards it to whichever controller
// it finds), and returns how many it sent.
func createRetrying(ctx context.Context, c *harness.Cluster, topic string, ct *workloads.CreateTopic) (int, error) {
	for attempts := 1; ; attempts++ {
		running := c.Running()
		if len(running) == 0 {
			return attempts, errors.New("no broker runs")
		}
		err := createVia(ctx, running[attempts%len(running)].Addr, topic, ct.Partitions, ct.ReplicationFactor)
		if err == nil {
			return attempts, nil
		}
		if ctx.Err() != nil {
			return attempts, fmt.Errorf("no CreateTopics accepted within %v: %w", outcomeWait, err)
		}
		bench.Pause(ctx, 10*time.Millisecond)
	}
}

// createVia sends one CreateTopics to the broker at addr. A topic that
// already exists counts as created: an earlier attempt whose answer was
// lost made it.
func createVia(ctx context.Context, addr, topic string, partitions int32, rf int16) error {
	d, err := harness.Dial(addr)
	if err != nil {
		return err
	}
	defer d.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := d.Request(actx, req)
	if err != nil {
		return err
	}
	cr := resp.(*kmsg.CreateTopicsResponse)
	if len(cr.Topics) != 1 {
		return fmt.Errorf("CreateTopics answered %d topics", len(cr.Topics))
	}
	if err := kerr.ErrorForCode(cr.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	return nil
}

// createAssigned creates topic with partition i on the brokers
// assignment[i] names.
func createAssigned(ctx context.Context, c *harness.Cluster, topic string, assignment [][]int32) error {
	cl, err := c.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, rs := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("create %s: %w", topic, err)
		}
	}
	return nil
}

// createServed creates topic through the round's broker in turn and times
// it until it is served: listed with leaders by every broker it is placed
// on, then one record produced to every partition acknowledged with
// acks=1 and with acks=all, both at once.
func (st *steps) createServed(ctx context.Context, c *harness.Cluster, prefix, topic string, ct *workloads.CreateTopic, start time.Time) error {
	via := c.Nodes()[st.round%len(c.Nodes())]
	if err := createVia(ctx, via.Addr, topic, ct.Partitions, ct.ReplicationFactor); err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	figs := map[string]float64{"created_s": since(start)}
	if err := awaitPlaced(ctx, c, topic, ct.Partitions); err != nil {
		return err
	}
	figs["listed_s"] = since(start)
	all, one, err := st.clients(c)
	if err != nil {
		return err
	}
	acked, leaderAck, err := timeBoth(start,
		func() error { return produceEach(ctx, all, topic, ct.Partitions) },
		func() error { return produceEach(ctx, one, topic, ct.Partitions) })
	figs["acked_s"], figs["leader_ack_s"] = acked, leaderAck
	if err != nil {
		return fmt.Errorf("produce to %s: %w", topic, err)
	}
	st.set(prefix, figs)
	return nil
}

// produceEach produces one record to every partition of topic and waits
// for the acknowledgements.
func produceEach(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	rs := make([]*kgo.Record, partitions)
	for p := range partitions {
		rs[p] = &kgo.Record{Topic: topic, Partition: p, Value: []byte(topic)}
	}
	return cl.ProduceSync(ctx, rs...).FirstErr()
}

// clients are the cell's acks=all and acks=1 clients of the cluster (see
// producerOpts), made at their first use and closed with the cluster.
func (st *steps) clients(c *harness.Cluster) (all, one *kgo.Client, err error) {
	if st.acksAll == nil {
		if st.acksAll, err = c.Client(producerOpts(kgo.AllISRAcks())...); err != nil {
			return nil, nil, err
		}
		if st.acksOne, err = c.Client(producerOpts(kgo.LeaderAck())...); err != nil {
			return nil, nil, err
		}
	}
	return st.acksAll, st.acksOne, nil
}

// awaitPlaced polls every broker until each one topic is placed on (its
// replicas, as the first broker to list it says) lists it with a leader
// for each of its partitions.
func awaitPlaced(ctx context.Context, c *harness.Cluster, topic string, partitions int32) error {
	var placed map[int32]bool // broker -> listed with leaders
	for {
		for _, nd := range c.Running() {
			if done, in := placed[nd.ID]; placed != nil && (done || !in) {
				continue
			}
			replicas, led := readTopic(ctx, nd.Addr, topic, partitions)
			if replicas == nil {
				continue
			}
			if placed == nil {
				placed = map[int32]bool{}
				for _, r := range replicas {
					placed[r] = false
				}
			}
			if _, in := placed[nd.ID]; in && led {
				placed[nd.ID] = true
			}
		}
		if placed != nil && allTrue(placed) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s not listed with leaders by every broker it is placed on (%v): %w", topic, placed, ctx.Err())
		}
		bench.Pause(ctx, probeEvery)
	}
}

func allTrue(m map[int32]bool) bool {
	for _, v := range m {
		if !v {
			return false
		}
	}
	return true
}

// readTopic asks the broker at addr for topic: the brokers its partitions
// are placed on (nil unless it lists all of them) and whether every
// partition has a leader.
func readTopic(ctx context.Context, addr, topic string, partitions int32) ([]int32, bool) {
	d, err := harness.Dial(addr)
	if err != nil {
		return nil, false
	}
	defer d.Close()
	m, err := d.Metadata(ctx, topic)
	if err != nil {
		return nil, false
	}
	for _, t := range m.Topics {
		if t.Topic == nil || *t.Topic != topic || t.ErrorCode != 0 || int32(len(t.Partitions)) != partitions {
			continue
		}
		var replicas []int32
		led := true
		for _, p := range t.Partitions {
			led = led && p.Leader >= 0 && p.ErrorCode == 0
			for _, r := range p.Replicas {
				if !slices.Contains(replicas, r) {
					replicas = append(replicas, r)
				}
			}
		}
		return replicas, led
	}
	return nil, false
}

// createBulk creates ct.Topics topics in requests of bulkBatch and waits
// until every partition has a leader.
func (st *steps) createBulk(ctx context.Context, c *harness.Cluster, ct *workloads.CreateTopic) error {
	cl, err := c.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(60_000)
	var all []string
	for first := 0; first < ct.Topics; first += bulkBatch {
		var names []string
		for range min(bulkBatch, ct.Topics-first) {
			names = append(names, st.topicName())
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		resp, err := adm.CreateTopics(cctx, ct.Partitions, ct.ReplicationFactor, nil, names...)
		cancel()
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("create %s..: %w", names[0], err)
		}
		all = append(all, names...)
	}
	st.created(all...)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	want := ct.Topics * int(ct.Partitions)
	for {
		led := 0
		if m, err := c.Metadata(wctx, all...); err == nil {
			for _, td := range m.Topics {
				for _, p := range td.Partitions {
					if p.Leader >= 0 {
						led++
					}
				}
			}
		}
		if led >= want {
			return nil
		}
		if wctx.Err() != nil {
			return fmt.Errorf("%d of %d partitions led: %w", led, want, wctx.Err())
		}
		bench.Pause(wctx, 250*time.Millisecond)
	}
}

// fault hits the nodes f names as how says (see workloads.Fault),
// remembering them, what they led and when, for the steps after it.
func (st *steps) fault(ctx context.Context, prefix string, f *workloads.Fault, how string) error {
	c, err := st.needCluster(how)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithTimeout(ctx, recoverWait)
	defer cancel()
	ctl, err := c.Controller(fctx)
	if err != nil {
		return err
	}
	if f.Node == "all" {
		st.hitAll(c, how)
		st.set(prefix, map[string]float64{"was_controller": 1})
		return st.hit(c, how, st.victims)
	}
	victim, err := st.pick(fctx, c, ctl, f.Node)
	if err != nil {
		return err
	}
	led, err := st.ledBy(fctx, c, victim)
	if err != nil {
		return err
	}
	st.victim, st.victims, st.victimLed, st.how = victim, []int32{victim}, led, how
	st.leaderFault = f.Node != "follower"
	st.affected = st.allPartitions()
	if st.leaderFault {
		st.affected = map[int32]bool{}
		for _, p := range led {
			if p.topic == st.loadTopic() {
				st.affected[p.index] = true
			}
		}
	}
	st.faultAt, st.faultBytes = time.Now(), 0
	if err := st.hit(c, how, st.victims); err != nil {
		return err
	}
	wasCtl := 0.0
	if victim == ctl {
		wasCtl = 1
	}
	st.set(prefix, map[string]float64{"node": float64(victim), "led": float64(len(led)), "was_controller": wasCtl})
	return nil
}

// pick is the node a fault names; ctl is the active controller.
func (st *steps) pick(ctx context.Context, c *harness.Cluster, ctl int32, which string) (int32, error) {
	switch which {
	case "controller":
		return ctl, nil
	case "other":
		others := c.Others(ctl)
		return others[st.round%len(others)], nil
	case "leader", "follower":
		if len(st.topics) == 0 {
			return 0, errors.New("no topic to find the leader of")
		}
		td, err := c.WaitLeaders(ctx, st.topics[len(st.topics)-1])
		if err != nil {
			return 0, err
		}
		if which == "leader" {
			return td.Partitions[0].Leader, nil
		}
		return followerOf0(td)
	case "transaction_coordinator":
		return st.txnCoordinator(ctx)
	}
	return 0, fmt.Errorf("node %q: want controller, other, leader, follower, all or transaction_coordinator", which)
}

// followerOf0 is a follower of partition 0 that leads nothing if there is
// one, else the first follower.
func followerOf0(td kadm.TopicDetail) (int32, error) {
	p0 := td.Partitions[0]
	leads := map[int32]bool{}
	for _, p := range td.Partitions {
		leads[p.Leader] = true
	}
	var pick int32 = -1
	for _, r := range p0.Replicas {
		if r != p0.Leader && (pick < 0 || (!leads[r] && leads[pick])) {
			pick = r
		}
	}
	if pick < 0 {
		return 0, errors.New("partition 0 has no follower")
	}
	return pick, nil
}

// ledBy lists the partitions node id leads among the topics the cell
// created in its setup and this round.
func (st *steps) ledBy(ctx context.Context, c *harness.Cluster, id int32) ([]partition, error) {
	if len(st.topics) == 0 {
		return nil, nil
	}
	m, err := c.Metadata(ctx, st.topics...)
	if err != nil {
		return nil, err
	}
	var out []partition
	for _, td := range m.Topics {
		for _, p := range td.Partitions {
			if p.Leader == id {
				out = append(out, partition{td.Topic, p.Partition})
			}
		}
	}
	slices.SortFunc(out, func(a, b partition) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.index, b.index))
	})
	return out, nil
}

// wait polls until w holds.
func (st *steps) wait(ctx context.Context, prefix string, w *workloads.Wait) error {
	c, err := st.needCluster("wait")
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, outcomeWait)
	defer cancel()
	if w.Fenced {
		if err := awaitFenced(wctx, c, st.lastTopic(), st.victim); err != nil {
			return err
		}
	}
	if w.ISR > 0 {
		if err := c.WaitISR(wctx, cmp.Or(w.Topic, st.lastTopic()), w.ISR); err != nil {
			return err
		}
	}
	if w.Acked {
		return st.awaitAck(wctx, prefix)
	}
	if w.Progress {
		return st.awaitProgress(wctx)
	}
	return nil
}

// awaitAck polls the tracked producer until a partition the last fault
// hit is acknowledged since it (see workloads.Wait).
func (st *steps) awaitAck(ctx context.Context, prefix string) error {
	if st.tracked == nil || st.faultAt.IsZero() {
		return errors.New("wait acked needs a tracked producer and a fault")
	}
	for seen := 0; ; {
		ws := st.tracked.Writes(seen)
		if at, ok := st.firstAck(ws); ok {
			st.set(prefix, map[string]float64{"first_ack_s": at.Sub(st.faultAt).Seconds()})
			return nil
		}
		seen += len(ws)
		if !bench.Pause(ctx, probeEvery) {
			return fmt.Errorf("no acknowledgement of the partitions broker %d's fault hit: %w", st.victim, ctx.Err())
		}
	}
}

func (st *steps) lastTopic() string {
	if len(st.topics) == 0 {
		return ""
	}
	return st.topics[len(st.topics)-1]
}

// awaitFenced polls every running broker until its Metadata lists victim
// neither as a broker nor as a leader of topic, and every partition of
// topic has a leader.
func awaitFenced(ctx context.Context, c *harness.Cluster, topic string, victim int32) error {
	var probes []*harness.Direct
	for _, nd := range c.Running() {
		d, err := harness.Dial(nd.Addr)
		if err != nil {
			return err
		}
		defer d.Close()
		probes = append(probes, d)
	}
	done := make([]bool, len(probes))
	for slices.Contains(done, false) {
		for i, d := range probes {
			if !done[i] {
				m, err := d.Metadata(ctx, topic)
				done[i] = err == nil && fenced(m, topic, victim)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("broker %d still listed, or still leading, %v after its fault", victim, outcomeWait)
		}
		bench.Pause(ctx, probeEvery)
	}
	return nil
}

// fenced: m lists victim neither as a broker nor as a leader, and every
// partition of topic has a leader.
func fenced(m *kmsg.MetadataResponse, topic string, victim int32) bool {
	for _, b := range m.Brokers {
		if b.NodeID == victim {
			return false
		}
	}
	if topic == "" {
		return true
	}
	for _, t := range m.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if t.ErrorCode != 0 || len(t.Partitions) == 0 {
			return false
		}
		for _, p := range t.Partitions {
			if p.Leader == victim || p.Leader < 0 {
				return false
			}
		}
		return true
	}
	return false
}

// restart starts the last faulted node again (see workloads.Restart).
func (st *steps) restart(ctx context.Context, prefix string, r *workloads.Restart) error {
	c, err := st.needCluster("restart")
	if err != nil {
		return err
	}
	if st.victim == 0 {
		return errors.New("no node was killed or stopped")
	}
	rctx, cancel := context.WithTimeout(ctx, recoverWait)
	defer cancel()
	id := st.victim
	st.victim, st.faultAt, st.how = 0, time.Time{}, ""
	if r.ISR {
		return st.rejoin(ctx, c, prefix, id)
	}
	if !r.Served {
		if err := c.WaitFenced(rctx, id); err != nil {
			return err
		}
		if err := c.Start(rctx, id); err != nil {
			return err
		}
		return c.WaitBrokers(rctx, len(c.Nodes()))
	}
	if err := st.serveAgain(rctx, c, prefix, id); err != nil {
		return err
	}
	return c.WaitBrokers(rctx, len(c.Nodes()))
}

// rejoin waits until node id's last registration is fenced, starts it
// and times it from the exec until every broker is listed and it is back
// in every ISR of the cell's last topic (a follower catching up).
func (st *steps) rejoin(ctx context.Context, c *harness.Cluster, prefix string, id int32) error {
	wctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	if err := c.WaitFenced(wctx, id); err != nil {
		return err
	}
	start := time.Now()
	if err := c.Start(wctx, id); err != nil {
		return err
	}
	listed, isr, err := timeBoth(start,
		func() error { return c.WaitBrokers(wctx, len(c.Nodes())) },
		func() error { return c.WaitISR(wctx, st.lastTopic(), len(c.Nodes())) })
	if err != nil {
		return err
	}
	st.set(prefix, map[string]float64{"listed_s": listed, "isr_s": isr, "caught_up_bytes_per_s": float64(st.faultBytes) / isr})
	return nil
}

// serveAgain execs node id and times it, from just before the exec, until
// its own Metadata lists it unfenced and a record produced to a partition
// it led, drawn from the round's seed, is acknowledged (both tried at
// once).
func (st *steps) serveAgain(ctx context.Context, c *harness.Cluster, prefix string, id int32) error {
	if len(st.victimLed) == 0 {
		return fmt.Errorf("broker %d led nothing to produce to", id)
	}
	pick := st.victimLed[rand.New(rand.NewPCG(uint64(st.round), 0x5ca1e)).IntN(len(st.victimLed))]
	node := c.Node(id)
	start := time.Now()
	if err := c.Start(ctx, id); err != nil {
		return err
	}
	listed, acked, err := timeBoth(start,
		func() error { return awaitListed(ctx, node.Addr, id) },
		func() error { return produceOne(ctx, c, pick) })
	if err != nil {
		return err
	}
	figs := map[string]float64{"listed_s": listed, "acked_s": acked, "served_s": max(listed, acked)}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", node.Child().Pid())); err == nil {
		figs["open_files"] = float64(len(fds))
	}
	st.set(prefix, figs)
	return nil
}

// produceOne produces one record to p through a new client seeded with
// every node, retrying as fast as producerOpts allow.
func produceOne(ctx context.Context, c *harness.Cluster, p partition) error {
	var seeds []string
	for _, n := range c.Nodes() {
		seeds = append(seeds, n.Addr)
	}
	cl, err := kgo.NewClient(append(producerOpts(kgo.AllISRAcks()), kgo.SeedBrokers(seeds...))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: p.topic, Partition: p.index, Value: []byte("restarted")}).FirstErr()
}

// awaitListed polls the broker at addr until its Metadata lists broker id
// (that is unfenced: Metadata leaves fenced brokers out).
func awaitListed(ctx context.Context, addr string, id int32) error {
	d, err := harness.Dial(addr)
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		if ids, err := d.Brokers(ctx); err == nil && slices.Contains(ids, id) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("broker %d never listed itself: %w", id, ctx.Err())
		}
		bench.Pause(ctx, probeEvery)
	}
}

// timeBoth runs a and b at once and returns when each returned, in
// seconds from start, and their errors joined.
func timeBoth(start time.Time, a, b func() error) (ta, tb float64, err error) {
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() { errA = a(); ta = since(start) })
	wg.Go(func() { errB = b(); tb = since(start) })
	wg.Wait()
	return ta, tb, errors.Join(errA, errB)
}

// since is the time from start, in seconds.
func since(start time.Time) float64 { return time.Since(start).Seconds() }
