// Package brokertest starts in-process brokers for tests: a fresh data
// directory, a listener on 127.0.0.1:0, the engine of your choice, and
// cleanup when the test ends. It wraps broker/harness, the one harness of
// tests, interop suites and benchmarks, with the test's lifetime and
// failures.
//
//	b := brokertest.Start(t, brokertest.Engine("segment"))
//	cl := b.Client(t) // a franz-go client seeded with b.Addr
//
// Defaults: the memory engine, topics auto-created with one partition, logs
// at warning level and above into the test log.
package brokertest

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/harness"
	// A test may start a broker on any engine.
	_ "github.com/minikafka/minikafka/engines/all"
)

// Broker is a running in-process broker: Server, Addr (host:port to
// connect to, also what Metadata advertises) and Config (what it was
// started with, Dir included, for tests that start another one alike).
type Broker struct {
	*harness.InProcess
}

// Option adjusts the configuration before Start.
type Option func(*broker.Config)

// Engine selects the storage engine by its registered name.
func Engine(name string) Option { return func(c *broker.Config) { c.Engine = name } }

// Dir uses dir (instead of a fresh t.TempDir()) for the data.
func Dir(dir string) Option { return func(c *broker.Config) { c.Dir = dir } }

// Configure applies f to the configuration: any other setting.
func Configure(f func(*broker.Config)) Option { return Option(f) }

// baseConfig is every test broker's configuration before the options.
func baseConfig(t testing.TB) broker.Config {
	return broker.Config{
		Engine:     "memory",
		AutoCreate: true,
		Logger:     slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

// Start starts a broker and closes it when the test ends.
func Start(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	cfg := baseConfig(t)
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.NodeID == 0 {
		cfg.NodeID = broker.DefaultNodeID
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err, "listen")
	b, err := harness.ServeInProcess(cfg, ln, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	waitReady(t, b)
	return &Broker{b}
}

// waitReady waits until the broker is registered with its controller and
// unfenced, so that a test's first request finds it serving.
func waitReady(t testing.TB, b *harness.InProcess) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, b.WaitReady(ctx), "broker %d ready", b.Config.NodeID)
}

// Restart closes the broker gracefully and starts it again on the same
// directory and address, as a process restart would; meanwhile, while the
// broker is down, it runs each of between (a test's change to the data
// directory).
func (b *Broker) Restart(t testing.TB, between ...func()) {
	t.Helper()
	require.NoError(t, b.Close())
	for _, f := range between {
		f()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, b.InProcess.Restart(ctx))
}

// Client returns a franz-go client seeded with the broker, closed when the
// test ends. opts come after the seed and may override anything.
func (b *Broker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr)}, opts...)...)
	require.NoError(t, err, "kgo.NewClient")
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client on a fresh franz-go client.
func (b *Broker) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(b.Client(t))
}

// CreateTopic creates a topic with the given partitions and fails the test
// if that does not work.
func (b *Broker) CreateTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	resp, err := b.Admin(t).CreateTopic(context.Background(), partitions, 1, nil, name)
	require.NoError(t, err, "create topic %s", name)
	require.NoError(t, resp.Err, "create topic %s", name)
}

// testWriter sends log lines to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}
