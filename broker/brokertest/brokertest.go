// Package brokertest starts in-process brokers for tests: a fresh data
// directory, a listener on 127.0.0.1:0, the engine of your choice, and
// cleanup when the test ends.
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
	// A test may start a broker on any engine.
	_ "github.com/minikafka/minikafka/engines/all"
)

// Broker is a running in-process broker.
type Broker struct {
	*broker.Server
	// Addr is host:port to connect to (also what Metadata advertises).
	Addr string
	// Config is what the server was started with (Dir included), for
	// Restart and for tests that want to start another one alike.
	Config broker.Config

	serveErr chan error
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
	b := &Broker{Config: cfg}
	b.start(t, "127.0.0.1:0")
	t.Cleanup(func() { b.stop(t) })
	return b
}

func (b *Broker) start(t testing.TB, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "listen")
	cfg := b.Config
	if cfg.AdvertisedAddr == "" {
		cfg.AdvertisedAddr = ln.Addr().String()
	}
	s, err := broker.New(cfg)
	if err != nil {
		ln.Close()
		require.NoError(t, err, "broker.New")
	}
	b.Server, b.Addr, b.serveErr = s, ln.Addr().String(), make(chan error, 1)
	go func() { b.serveErr <- s.Serve(ln) }()
	// Ready: registered with its controller and unfenced, so that a test's
	// first request finds the broker serving.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.WaitReady(ctx), "broker ready")
}

func (b *Broker) stop(t testing.TB) {
	t.Helper()
	if b.Server == nil {
		return
	}
	require.NoError(t, b.Server.Close(), "broker.Close")
	require.ErrorIs(t, <-b.serveErr, broker.ErrServerClosed, "Serve's result")
	b.Server = nil
}

// Restart closes the broker gracefully and starts it again on the same
// directory and address, as a process restart would; meanwhile, while the
// broker is down, it runs each of between (a test's change to the data
// directory).
func (b *Broker) Restart(t testing.TB, between ...func()) {
	t.Helper()
	addr := b.Addr
	b.stop(t)
	for _, f := range between {
		f()
	}
	b.start(t, addr)
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
