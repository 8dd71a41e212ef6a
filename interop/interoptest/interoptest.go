// Package interoptest starts the Kafka-compatible servers that the interop
// tests and the command tests (cmd/cli) drive with real clients: franz-go's
// in-memory fake cluster (kfake) as the reference, and mini-kafka's broker
// over each registered engine.
package interoptest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/engine"
)

// Server is one running Kafka-compatible server.
type Server struct {
	// Name identifies the server in subtest names: "kfake", "broker/segment".
	Name string
	// Addr is host:port for clients' seed brokers. It stays the same across
	// Restart.
	Addr string
	// Durable says acknowledged records survive Restart.
	Durable bool
	// Restart stops the server and starts it again on the same data and
	// address. Nil when the server cannot restart (kfake).
	Restart func(t testing.TB)
}

// Target starts a fresh Server for one test. Partitions is the default
// partition count for auto-created topics.
type Target struct {
	Name  string
	Start func(t testing.TB, partitions int32) *Server
}

// Kfake is franz-go's in-memory fake cluster with one broker and topic
// auto-creation, closed at the end of the test.
var Kfake = Target{Name: "kfake", Start: startKfake}

func startKfake(t testing.TB, partitions int32) *Server {
	t.Helper()
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(int(partitions)),
	)
	require.NoError(t, err, "start kfake")
	t.Cleanup(c.Close)
	return &Server{Name: "kfake", Addr: c.ListenAddrs()[0]}
}

// Targets are every server the interop tests run on: kfake first, as the
// reference, then the broker over each registered engine.
func Targets() []Target {
	return append([]Target{Kfake}, brokerTargets()...)
}

// brokerTargets is the broker over every engine it carries (the broker
// imports them all, so engine.Names lists them).
func brokerTargets() []Target {
	var ts []Target
	for _, name := range engine.Names() {
		ts = append(ts, Broker(name))
	}
	return ts
}

// Broker is mini-kafka's broker, in process, over the named engine, with
// topic auto-creation and sync=always; opts change its configuration after
// that.
func Broker(engineName string, opts ...brokertest.Option) Target {
	return Target{Name: "broker/" + engineName, Start: func(t testing.TB, partitions int32) *Server {
		t.Helper()
		d, err := engine.Lookup(engineName)
		require.NoError(t, err)
		all := append([]brokertest.Option{brokertest.Engine(engineName), brokertest.Configure(func(c *broker.Config) {
			c.DefaultPartitions = partitions
			c.AutoCreate = true
			c.EngineOptions.Sync = engine.SyncAlways
		})}, opts...)
		b := brokertest.Start(t, all...)
		return &Server{Name: "broker/" + engineName, Addr: b.Addr, Durable: d.Caps.Durable, Restart: func(t testing.TB) { b.Restart(t) }}
	}}
}

// Context bounds a test's client calls, so that a server that hangs fails
// the test instead of hanging it; it ends with the test.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// KcatPath finds kcat. Without it the test skips, except under CI (the CI
// variable set), where .ci/run installs it and its absence is a failure.
func KcatPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("kcat is not installed but CI is set: .ci/run installs it (apt-get install kcat)")
	}
	t.Skip("kcat is not installed (apt-get install kcat); set CI to make this a failure")
	return ""
}

// Python finds a Python 3 whose "import <imports>" succeeds: Debian's
// python3-* packages live under /usr/bin/python3, which another python3
// first in PATH (pyenv, a venv) does not see. Without one the test skips,
// except under CI, where .ci/run installs the packages (apt-get install
// <packages>) and their absence is a failure.
func Python(t testing.TB, imports, packages string) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, py := range candidates {
		if exec.Command(py, "-c", "import "+imports).Run() == nil {
			return py
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("python3 cannot import %s but CI is set: .ci/run installs it (apt-get install %s)", imports, packages)
	}
	t.Skipf("python3 cannot import %s (apt-get install %s); set CI to make this a failure", imports, packages)
	return ""
}
