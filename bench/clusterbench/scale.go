package clusterbench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/broker/harness"
)

// scaleBatch is how many topics one CreateTopics of the setup asks for.
const scaleBatch = 25

// measureScale creates the topics of the restart at scale on a fresh
// cluster, then restarts a broker other than the controller Restarts
// times: SIGTERM, exit, exec again, and the time from the exec until its
// own Metadata lists it unfenced and a produce to a partition it leads is
// acknowledged.
func measureScale(ctx context.Context, cfg *Config, res *Result, engine string) {
	c, dir, err := startCluster(ctx, cfg, engine, "scale")
	if err != nil {
		res.add(engine, RestartAtScale, failed(fmt.Errorf("start: %w", err)))
		return
	}
	defer os.RemoveAll(dir)
	defer c.Close()
	start := time.Now()
	if err := createScaleTopics(ctx, c, cfg.ScaleTopics, cfg.ScalePartitions, cfg.ScaleRF); err != nil {
		res.add(engine, RestartAtScale, failed(fmt.Errorf("setup: %w", err)))
		return
	}
	if res.ScaleSetup == nil {
		res.ScaleSetup = map[string]float64{}
	}
	res.ScaleSetup[engine] = since(start)
	fmt.Fprintf(cfg.Log, "  %d topics created and led in %v\n", cfg.ScaleTopics, time.Since(start).Round(time.Millisecond))
	for i := range cfg.Restarts {
		r := restartOnce(ctx, c, i)
		fmt.Fprintf(cfg.Log, "  restart %d: %s (shutdown %s, leads %d partitions)\n", i+1, say(r), fmtSeconds(r.Shutdown), r.Partitions)
		res.add(engine, RestartAtScale, r)
	}
}

func fmtSeconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

func scaleTopic(i int) string { return fmt.Sprintf("scale-%04d", i) }

// createScaleTopics creates n topics in requests of scaleBatch and waits
// until every partition has a leader.
func createScaleTopics(ctx context.Context, c *harness.Cluster, n int, partitions int32, rf int16) error {
	cl, err := c.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(60_000)
	for first := 0; first < n; first += scaleBatch {
		var names []string
		for i := first; i < min(n, first+scaleBatch); i++ {
			names = append(names, scaleTopic(i))
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		resp, err := adm.CreateTopics(cctx, partitions, rf, nil, names...)
		cancel()
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("create %s..: %w", names[0], err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	want := n * int(partitions)
	for {
		m, err := c.Metadata(wctx)
		led := 0
		if err == nil {
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

// restartOnce stops a broker other than the controller (in turn), starts
// it again and times it until it serves: listed by itself, and a produce
// to one of its partitions, drawn at random, acknowledged.
func restartOnce(ctx context.Context, c *harness.Cluster, round int) Rep {
	rctx, cancel := context.WithTimeout(ctx, recoverWait)
	defer cancel()
	ctl, err := c.Controller(rctx)
	if err != nil {
		return failed(err)
	}
	others := c.Others(ctl)
	victim := others[round%len(others)]
	m, err := c.Metadata(rctx)
	if err != nil {
		return failed(err)
	}
	type led struct {
		topic     string
		partition int32
	}
	var mine []led
	for _, td := range m.Topics {
		for _, p := range td.Partitions {
			if p.Leader == victim {
				mine = append(mine, led{td.Topic, p.Partition})
			}
		}
	}
	if len(mine) == 0 {
		return failed(fmt.Errorf("broker %d leads nothing", victim))
	}
	// The partition produced to is drawn from the round's own seed: any
	// of them, the same in every run.
	pick := mine[rand.New(rand.NewPCG(uint64(round), 0x5ca1e)).IntN(len(mine))]
	topic, partition := pick.topic, pick.partition
	r := Rep{Node: victim, Partitions: len(mine)}
	stopped := time.Now()
	if err := c.Stop(victim); err != nil {
		return failed(err)
	}
	r.Shutdown = since(stopped)
	if err := serveAgain(rctx, c, victim, topic, partition, &r); err != nil {
		r.Error = err.Error()
		return r
	}
	if err := c.WaitBrokers(rctx, len(c.Nodes())); err != nil {
		r.Error = "after the restart: " + err.Error()
	}
	return r
}

// serveAgain execs node id and waits, from just before the exec, until
// its own Metadata lists it unfenced and a produce to partition of topic,
// which it leads, is acknowledged (both tried at once).
func serveAgain(ctx context.Context, c *harness.Cluster, id int32, topic string, partition int32, r *Rep) error {
	octx, cancel := context.WithTimeout(ctx, outcomeWait)
	defer cancel()
	node := c.Node(id)
	start := time.Now()
	if err := c.Start(octx, id); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var listErr, prodErr error
	wg.Go(func() {
		listErr = awaitListed(octx, node.Addr, id)
		r.Listed = since(start)
	})
	wg.Go(func() {
		prodErr = produceTo(octx, c, topic, partition)
		r.Seconds = since(start)
	})
	wg.Wait()
	if err := errors.Join(listErr, prodErr); err != nil {
		return err
	}
	r.Seconds = max(r.Seconds, r.Listed)
	if n, err := openFiles(node.Child().Pid()); err == nil {
		r.OpenFiles = n
	}
	return nil
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
		ids, err := d.Brokers(ctx)
		if err == nil {
			for _, b := range ids {
				if b == id {
					return nil
				}
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("broker %d never listed itself: %w", id, ctx.Err())
		}
		bench.Pause(ctx, probeEvery)
	}
}

// produceTo produces one record to partition of topic through a new
// client seeded with every node, retrying as fast as ProducerOpts allow.
func produceTo(ctx context.Context, c *harness.Cluster, topic string, partition int32) error {
	cl, err := kgo.NewClient(append(ProducerOpts(), kgo.SeedBrokers(addrs(c)...), kgo.RequiredAcks(kgo.AllISRAcks()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: partition, Value: []byte("restarted")}).FirstErr()
}

// addrs are every node's address, running or not.
func addrs(c *harness.Cluster) []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.Addr)
	}
	return out
}

// openFiles counts the open file descriptors of process pid.
func openFiles(pid int) (int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds), err
}
