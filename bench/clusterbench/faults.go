package clusterbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/broker/harness"
)

// Bounds on the waits of one measurement: far beyond any target, so that
// a broken cluster fails the measurement instead of hanging the run.
const (
	outcomeWait = time.Minute
	recoverWait = 2 * time.Minute
	probeEvery  = 2 * time.Millisecond
)

// controllerFailover kills the active controller and sends CreateTopics
// to the survivors in turn (each forwards it to whichever controller it
// finds) until one succeeds; then starts the killed node again and waits
// until every node lists three brokers.
func controllerFailover(ctx context.Context, c *harness.Cluster, round int) Rep {
	ctl, err := c.Controller(ctx)
	if err != nil {
		return failed(err)
	}
	survivors := c.Others(ctl)
	topic := fmt.Sprintf("failover-%d", round)
	start := time.Now()
	if err := c.Kill(ctl); err != nil {
		return failed(err)
	}
	octx, cancel := context.WithTimeout(ctx, outcomeWait)
	defer cancel()
	r := Rep{Node: ctl}
	for {
		r.Attempts++
		err = createTopic(octx, c.Node(survivors[r.Attempts%len(survivors)]).Addr, topic, 1, 2)
		if err == nil {
			break
		}
		if octx.Err() != nil {
			return failed(fmt.Errorf("no CreateTopics accepted within %v of the kill: %w", outcomeWait, err))
		}
		bench.Pause(octx, 10*time.Millisecond)
	}
	r.Seconds = since(start)
	if err := restart(ctx, c, ctl); err != nil {
		r.Error = err.Error()
	}
	return r
}

// restart waits until the last registration of node id is fenced, starts
// it again and waits until every node lists every broker: then the new
// process is registered and unfenced.
func restart(ctx context.Context, c *harness.Cluster, id int32) error {
	rctx, cancel := context.WithTimeout(ctx, recoverWait)
	defer cancel()
	if err := c.WaitFenced(rctx, id); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := c.Start(rctx, id); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := c.WaitBrokers(rctx, len(c.Nodes())); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// createTopic sends one CreateTopics to the broker at addr. A topic that
// already exists counts as created: an earlier attempt whose answer was
// lost made it.
func createTopic(ctx context.Context, addr, topic string, partitions int32, rf int16) error {
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

// brokerFailure creates a topic of three partitions with three replicas
// (each broker leads one), kills a broker other than the controller, and
// polls both survivors until neither lists it nor shows a partition led
// by it or by nobody; then starts it again and waits for the ISRs to fill.
func brokerFailure(ctx context.Context, c *harness.Cluster, round int) Rep {
	topic := fmt.Sprintf("fence-%d", round)
	sctx, cancel := context.WithTimeout(ctx, recoverWait)
	defer cancel()
	td, err := c.CreateTopic(sctx, topic, 3, 3, nil)
	if err != nil {
		return failed(err)
	}
	ctl, err := c.Controller(sctx)
	if err != nil {
		return failed(err)
	}
	candidates := c.Others(ctl)
	victim := candidates[round%len(candidates)]
	led := 0
	for _, p := range td.Partitions {
		if p.Leader == victim {
			led++
		}
	}
	if led == 0 {
		return failed(fmt.Errorf("broker %d leads no partition of %s", victim, topic))
	}
	var probes []*harness.Direct
	for _, id := range c.Others(victim) {
		d, err := harness.Dial(c.Node(id).Addr)
		if err != nil {
			return failed(err)
		}
		defer d.Close()
		probes = append(probes, d)
	}
	start := time.Now()
	if err := c.Kill(victim); err != nil {
		return failed(err)
	}
	r := Rep{Node: victim, Moved: led}
	if err := awaitFenced(ctx, probes, topic, victim); err != nil {
		return failed(err)
	}
	r.Seconds = since(start)
	if err := restart(ctx, c, victim); err != nil {
		r.Error = err.Error()
		return r
	}
	if err := c.WaitISR(sctx, topic, 3); err != nil {
		r.Error = "restart: " + err.Error()
	}
	return r
}

// awaitFenced polls every probe until its Metadata lists victim neither
// as a broker nor as a leader of topic, and every partition has a leader.
func awaitFenced(ctx context.Context, probes []*harness.Direct, topic string, victim int32) error {
	octx, cancel := context.WithTimeout(ctx, outcomeWait)
	defer cancel()
	done := make([]bool, len(probes))
	for !allTrue(done) {
		for i, d := range probes {
			if done[i] {
				continue
			}
			m, err := d.Metadata(octx, topic)
			done[i] = err == nil && fenced(m, topic, victim)
		}
		if octx.Err() != nil {
			return fmt.Errorf("broker %d still listed, or still leading, %v after its kill", victim, outcomeWait)
		}
		bench.Pause(octx, probeEvery)
	}
	return nil
}

func allTrue(bs []bool) bool { return !slices.Contains(bs, false) }

// fenced: m lists victim neither as a broker nor as a leader, and every
// partition of topic has a leader.
func fenced(m *kmsg.MetadataResponse, topic string, victim int32) bool {
	for _, b := range m.Brokers {
		if b.NodeID == victim {
			return false
		}
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
