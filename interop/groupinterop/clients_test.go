package groupinterop

import (
	"bufio"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/interop/interoptest"
)

// franzClient is franz-go's group consumer with its default balancer,
// cooperative-sticky, committing automatically (and on revoke and close).
var franzClient = client{name: "franz-go", start: startFranz}

type franzConsumer struct {
	cl   *kgo.Client
	kill *killSwitch
	done chan struct{}
}

func startFranz(t *testing.T, addr, group, topic string, session time.Duration, out chan<- rec) consumer {
	t.Helper()
	k := &killSwitch{}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(session),
		kgo.HeartbeatInterval(heartbeatInterval),
		kgo.AutoCommitInterval(200*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.Dialer(k.DialContext),
	)
	require.NoError(t, err)
	c := &franzConsumer{cl: cl, kill: k, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				out <- rec{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)}
			})
		}
	}()
	t.Cleanup(c.Stop)
	return c
}

func (c *franzConsumer) Stop() {
	c.cl.Close()
	<-c.done
}

func (c *franzConsumer) Kill() { c.kill.kill() }

// saramaClient is sarama's consumer group (eager rebalancing: sarama has no
// cooperative protocol), marking every message and committing every 200ms
// and on close.
var saramaClient = client{name: "sarama", start: startSarama}

type saramaConsumer struct {
	g      sarama.ConsumerGroup
	kill   *killSwitch
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

type saramaHandler struct{ out chan<- rec }

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.out <- rec{Partition: m.Partition, Offset: m.Offset, Value: string(m.Value)}
		s.MarkMessage(m, "")
	}
	return nil
}

func startSarama(t *testing.T, addr, group, topic string, session time.Duration, out chan<- rec) consumer {
	t.Helper()
	k := &killSwitch{}
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = session
	cfg.Consumer.Group.Heartbeat.Interval = heartbeatInterval
	// sarama waits 2 s before retrying a failed join (REBALANCE_IN_PROGRESS
	// included) and 250 ms before retrying metadata: that, not the broker,
	// was most of its time in these tests.
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Retry.Backoff = 100 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	cfg.Net.Proxy.Enable = true
	cfg.Net.Proxy.Dialer = k
	g, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	c := &saramaConsumer{g: g, kill: k, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, saramaHandler{out}); err != nil && ctx.Err() == nil {
				time.Sleep(50 * time.Millisecond) // sarama's own retry pace after a failed session
			}
		}
	}()
	t.Cleanup(c.Stop)
	return c
}

func (c *saramaConsumer) Stop() {
	c.once.Do(func() {
		c.cancel()
		<-c.done
		c.g.Close()
	})
}

func (c *saramaConsumer) Kill() {
	c.kill.kill()
}

// kcatClient is kcat -G: librdkafka's balanced consumer, here with the
// cooperative-sticky assignor, committing every 200ms and on close.
var kcatClient = client{name: "kcat", start: startKcat}

type kcatConsumer struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

func startKcat(t *testing.T, addr, group, topic string, session time.Duration, out chan<- rec) consumer {
	t.Helper()
	cmd := exec.Command(interoptest.KcatPath(t), "-b", addr, "-G", group, "-q", "-u",
		"-f", "%p\t%o\t%s\n",
		"-X", "auto.offset.reset=earliest",
		"-X", "partition.assignment.strategy=cooperative-sticky",
		"-X", "session.timeout.ms="+strconv.Itoa(int(session.Milliseconds())),
		"-X", "heartbeat.interval.ms="+strconv.Itoa(int(heartbeatInterval.Milliseconds())),
		"-X", "auto.commit.interval.ms=200",
		"-X", "fetch.wait.max.ms=100",
		topic)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	c := &kcatConsumer{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), "\t", 3)
			if len(f) != 3 {
				continue
			}
			p, err1 := strconv.Atoi(f[0])
			o, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 == nil && err2 == nil {
				out <- rec{Partition: int32(p), Offset: o, Value: f[2]}
			}
		}
	}()
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("kcat stderr:\n%s", stderr.String())
		}
	})
	return c
}

// Stop sends SIGTERM: kcat closes its consumer (commits, leaves) and exits.
func (c *kcatConsumer) Stop() { c.stop(syscall.SIGTERM) }

// Kill sends SIGKILL: the process is gone, nothing said to the broker.
func (c *kcatConsumer) Kill() { c.stop(syscall.SIGKILL) }

func (c *kcatConsumer) stop(sig syscall.Signal) {
	c.once.Do(func() {
		c.cmd.Process.Signal(sig)
		<-c.done
		c.cmd.Wait()
	})
}
