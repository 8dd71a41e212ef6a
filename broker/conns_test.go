package broker_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
)

// TestThousandConnections opens a thousand connections at once against a
// broker that allows 100: the rest are closed at once, memory stays
// bounded, and a client connected before keeps being served and loses
// nothing it was told was written.
func TestThousandConnections(t *testing.T) {
	const maxConns, flood = 100, 1000
	b := brokertest.Start(t, brokertest.Configure(func(c *broker.Config) { c.MaxConns = maxConns }))
	b.CreateTopic(t, "flood", 2)
	cl := b.Client(t, kgo.DefaultProduceTopic("flood"))
	produceN(t, cl, "flood", "before", 100)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	conns := make([]net.Conn, flood)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", b.Addr)
			if err == nil {
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()

	// The refused ones are closed by the broker: count them by reading,
	// all at once (an open one costs the whole wait).
	var refused atomic.Int32
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c == nil || closedSoon(c) {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	require.GreaterOrEqual(t, int(refused.Load()), flood-maxConns, "connections beyond MaxConns are closed")

	// The client that was there before keeps producing on its connection.
	produceN(t, cl, "flood", "during", 100)

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	assert.Less(t, grown, int64(64<<20), "heap grew by %d bytes for %d connections", grown, flood)

	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	got := consumeN(t, b, "flood", 200)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	for i := range 100 {
		for _, p := range []string{"before", "during"} {
			assert.True(t, seen[fmt.Sprintf("%s-%d", p, i)], "%s-%d acknowledged and consumed", p, i)
		}
	}
}

// flakyListener fails its first Accepts the way a process out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	failures atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

func TestAcceptErrorsDoNotStopServing(t *testing.T) {
	s, err := broker.New(broker.Config{Dir: t.TempDir(), Engine: "memory"})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fl := &flakyListener{Listener: ln}
	fl.failures.Store(3)
	served := make(chan error, 1)
	go func() { served <- s.Serve(fl) }()
	// Metadata lists the broker once it is registered and unfenced, which
	// a loaded machine may take longer for than the failed accepts.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.WaitReady(ctx))
	metadataWorks(t, ln.Addr().String())
	require.NoError(t, s.Close())
	require.ErrorIs(t, <-served, broker.ErrServerClosed)
}
