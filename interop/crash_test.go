package interop

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/harness"
	"github.com/minikafka/minikafka/engine"
)

// childEnv makes the test binary a broker process (engine, dir, addr), so
// the kill -9 test needs no separate build.
const childEnv = "MINIKAFKA_INTEROP_BROKER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(serveChild(spec))
	}
	os.Exit(m.Run())
}

// serveChild runs a broker with the spec's sync policy until SIGTERM.
func serveChild(spec string) int {
	var engineName, dir, addr, sync string
	if _, err := fmt.Sscanf(spec, "%s %s %s %s", &engineName, &dir, &addr, &sync); err != nil {
		fmt.Fprintln(os.Stderr, "bad child spec:", spec, err)
		return 2
	}
	cfg := broker.Config{Engine: engineName, Dir: dir, Addr: addr, AdvertisedAddr: addr, AutoCreate: true}
	var err error
	if cfg.EngineOptions.Sync, err = engine.ParseSyncPolicy(sync); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s, err := broker.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		s.Close()
	}()
	if err := s.ListenAndServe(); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChild starts the test binary as a broker on dir and addr, syncing
// as sync says (always, interval, never).
func startChild(t *testing.T, engineName, dir, addr, sync string) *harness.Child {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(childEnv, fmt.Sprintf("%s %s %s %s", engineName, dir, addr, sync))
	c, err := harness.StartChild(context.Background(), harness.ChildConfig{
		Path: self, Args: []string{"-test.run=^$"}, Addr: addr, Log: testLog{t}, Ready: 60 * time.Second,
	})
	require.NoError(t, err, "start broker child")
	return c
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("broker: %s", p)
	return len(p), nil
}

// TestKill9LosesNothingAcknowledged kills the broker process (SIGKILL, no
// shutdown) while franz-go's idempotent producer is sending with acks=all,
// restarts it on the same directory, and checks that every acknowledged
// record is there exactly once: nothing acknowledged sat only in the
// process's memory, and the retried batches of the interrupted requests are
// recognised from the recovered producer state, not stored twice. (A killed
// process keeps what reached the OS page cache; losing the page cache is a
// power loss, which engine/crashtest covers.) So under sync=interval and
// never too, on every durable engine: the broker, the only replica of its
// partitions, leads them again, and nothing it acknowledged was held in
// the engine's memory.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	for _, name := range engine.Names() {
		d, err := engine.Lookup(name)
		require.NoError(t, err)
		if !d.Caps.Durable {
			continue
		}
		t.Run(name, func(t *testing.T) { testKill9(t, name, "always") })
		// Under the other policies too: a kill -9 spares the page cache, and
		// an acknowledgement waits for the engine to hand it the batch.
		for _, sync := range []string{"interval", "never"} {
			t.Run(name+"/sync="+sync, func(t *testing.T) { testKill9(t, name, sync) })
		}
	}
}

func testKill9(t *testing.T, engineName, sync string) {
	dir := t.TempDir()
	addr, err := harness.FreeAddr()
	require.NoError(t, err)
	child := startChild(t, engineName, dir, addr, sync)
	defer func() { _ = child.Stop() }()
	const topic = "kill9"
	createTopic(t, addr, topic, 3)

	recs := makeRecords(900, restartRecords, false)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(200),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.RecordDeliveryTimeout(60*time.Second))
	require.NoError(t, err)
	defer cl.Close()

	want, errs, before := produceThrough(t, ctx, cl, recs, func() {
		require.NoError(t, child.Kill(), "kill -9")
		child = startChild(t, engineName, dir, addr, sync)
	})
	t.Logf("%d records acknowledged when the broker was killed", before)
	assert.Empty(t, errs, "the producer retries through the crash")
	checkSame(t, want, consumeAll(t, addr, topic, len(want)))
}
