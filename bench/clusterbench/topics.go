package clusterbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/broker/harness"
)

// ProducerOpts are the franz-go options of the benchmark's producers
// that wait for a new topic or a restarted broker: metadata refreshed
// as often as franz-go allows (10 ms) and retries 5 ms apart, so that the
// client's own backoff (5 s between metadata refreshes, retries 250 ms
// and more apart, by default) does not hide the cluster's time. A topic
// new to the client still costs one metadata round trip, and franz-go
// waits at least 10 ms between two.
func ProducerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.MetadataMinAge(10 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DisableIdempotentWrite(),
		kgo.RecordDeliveryTimeout(outcomeWait),
		kgo.ProducerLinger(0),
	}
}

// topicCreation creates n topics of partitions partitions with three
// replicas, one at a time, each through the next broker in turn, and
// times each until every broker it is placed on lists it with a leader
// for every partition and a produce of one record to every partition is
// acknowledged with acks=all (and, beside it, with acks=1).
func topicCreation(ctx context.Context, c *harness.Cluster, n int, partitions int32) []Rep {
	fail := func(err error) []Rep { return []Rep{failed(err)} }
	all, err := c.Client(append(ProducerOpts(), kgo.RequiredAcks(kgo.AllISRAcks()))...)
	if err != nil {
		return fail(err)
	}
	defer all.Close()
	one, err := c.Client(append(ProducerOpts(), kgo.RequiredAcks(kgo.LeaderAck()))...)
	if err != nil {
		return fail(err)
	}
	defer one.Close()
	probes := map[int32]*harness.Direct{}
	for _, nd := range c.Nodes() {
		d, err := harness.Dial(nd.Addr)
		if err != nil {
			return fail(err)
		}
		defer d.Close()
		probes[nd.ID] = d
	}
	var out []Rep
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		via := c.Nodes()[i%len(c.Nodes())]
		out = append(out, createOne(ctx, via.Addr, fmt.Sprintf("created-%04d", i), partitions, probes, all, one))
	}
	return out
}

func createOne(ctx context.Context, via, topic string, partitions int32, probes map[int32]*harness.Direct, all, one *kgo.Client) Rep {
	octx, cancel := context.WithTimeout(ctx, outcomeWait)
	defer cancel()
	start := time.Now()
	if err := createTopic(octx, via, topic, partitions, 3); err != nil {
		return failed(fmt.Errorf("create %s: %w", topic, err))
	}
	r := Rep{Created: since(start)}
	if err := awaitPlaced(octx, probes, topic, partitions); err != nil {
		return failed(err)
	}
	r.Listed = since(start)
	var wg sync.WaitGroup
	var errAll, errOne error
	wg.Go(func() {
		errAll = produceEach(octx, all, topic, partitions)
		r.Seconds = since(start)
	})
	wg.Go(func() {
		errOne = produceEach(octx, one, topic, partitions)
		r.LeaderAck = since(start)
	})
	wg.Wait()
	if err := errors.Join(errAll, errOne); err != nil {
		return failed(fmt.Errorf("produce to %s: %w", topic, err))
	}
	return r
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

// awaitPlaced polls until the Metadata of every broker topic is placed on
// (its replicas, as the first broker to list it says) lists it with a
// leader for each of its partitions.
func awaitPlaced(ctx context.Context, probes map[int32]*harness.Direct, topic string, partitions int32) error {
	var placed map[int32]bool // broker -> listed with leaders
	for {
		for id, d := range probes {
			if placed != nil && (placed[id] || !inPlacement(placed, id)) {
				continue
			}
			m, err := d.Metadata(ctx, topic)
			if err != nil {
				continue
			}
			replicas, led := readTopic(m, topic, partitions)
			if replicas == nil {
				continue
			}
			if placed == nil {
				placed = map[int32]bool{}
				for _, r := range replicas {
					placed[r] = false
				}
			}
			if led && inPlacement(placed, id) {
				placed[id] = true
			}
		}
		if placed != nil && everyTrue(placed) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s not listed with leaders by every broker it is placed on (%v): %w", topic, placed, ctx.Err())
		}
		bench.Pause(ctx, probeEvery)
	}
}

func inPlacement(placed map[int32]bool, id int32) bool {
	_, ok := placed[id]
	return ok
}

func everyTrue(m map[int32]bool) bool {
	for _, v := range m {
		if !v {
			return false
		}
	}
	return true
}

// readTopic returns the brokers topic's partitions are placed on (nil
// when m does not list the topic with all its partitions) and whether
// every partition has a leader.
func readTopic(m *kmsg.MetadataResponse, topic string, partitions int32) ([]int32, bool) {
	for _, t := range m.Topics {
		if t.Topic == nil || *t.Topic != topic || t.ErrorCode != 0 || int32(len(t.Partitions)) != partitions {
			continue
		}
		seen := map[int32]bool{}
		var replicas []int32
		led := true
		for _, p := range t.Partitions {
			if p.Leader < 0 || p.ErrorCode != 0 {
				led = false
			}
			for _, r := range p.Replicas {
				if !seen[r] {
					seen[r] = true
					replicas = append(replicas, r)
				}
			}
		}
		return replicas, led
	}
	return nil, false
}
