package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench/peer"
)

func TestServerOptions(t *testing.T) {
	cases := []struct {
		name, dir, sync string
		interval        time.Duration
		ok, always      bool
	}{
		{"always", "d", "always", 0, true, true},
		{"interval", "d", "interval", 100 * time.Millisecond, true, false},
		{"no dir", "", "always", 0, false, false},
		{"bad policy", "d", "never", 0, false, false},
		{"zero interval", "d", "interval", 0, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := serverOptions(c.dir, c.sync, c.interval)
			if !c.ok {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.True(t, o.JetStream)
			assert.Equal(t, c.always, o.SyncAlways)
			assert.Equal(t, "127.0.0.1", o.Host, "loopback only")
		})
	}
}

// startServer runs the benchmark's server in this process on a temporary
// directory.
func startServer(t *testing.T) string {
	o, err := serverOptions(t.TempDir(), "always", 0)
	require.NoError(t, err)
	s, err := server.NewServer(o)
	require.NoError(t, err)
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	require.True(t, s.ReadyForConnections(30*time.Second))
	return s.Addr().String()
}

func phase(t *testing.T, addr, mode string, extra ...string) peer.Output {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append([]string{"nats-load", "-addr", addr, "-mode", mode, "-idle", "5s"}, extra...)
	require.NoError(t, run(context.Background(), args, &stdout, &stderr), stderr.String())
	var out peer.Output
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), stdout.String())
	return out
}

// TestLoadPhases runs every phase against a real JetStream server: what is
// produced is counted, read back from the start, and read at the tail.
func TestLoadPhases(t *testing.T) {
	addr := startServer(t)
	phase(t, addr, peer.Create)
	p := phase(t, addr, peer.Produce, "-record-size", "100", "-in-flight", "8", "-duration", "10s", "-max-records", "300")
	require.NotNil(t, p.Produce)
	assert.Equal(t, int64(300), p.Produce.Records, "the record cap ends the phase")
	assert.Zero(t, p.Produce.Errors)
	assert.Equal(t, int64(300*100), p.Produce.Bytes)
	assert.Equal(t, int64(300), p.Produce.Latency.Count)

	n := phase(t, addr, peer.Count)
	assert.Equal(t, int64(300), n.Records)

	c := phase(t, addr, peer.CatchUp, "-records", "300")
	require.NotNil(t, c.Consume)
	assert.Equal(t, int64(300), c.Consume.Records)

	tail := phase(t, addr, peer.Tail, "-record-size", "64", "-in-flight", "4", "-duration", "300ms", "-max-records", "100")
	require.NotNil(t, tail.Produce)
	require.NotNil(t, tail.Consume)
	assert.Equal(t, tail.Produce.Records, tail.Consume.Records, "the tail reader sees exactly what was produced")
	assert.Equal(t, tail.Consume.Records, tail.Consume.EndToEnd.Count, "every record carries its send time")
}

func TestBadUsage(t *testing.T) {
	var out, errOut strings.Builder
	assert.Error(t, run(context.Background(), nil, &out, &errOut))
	assert.Error(t, run(context.Background(), []string{"nope"}, &out, &errOut))
	assert.Error(t, run(context.Background(), []string{"nats-load", "-mode", "produce", "-addr", "x", "-record-size", "4"}, &out, &errOut), "a record too small to carry its send time")
	assert.Error(t, run(context.Background(), []string{"nats-serve"}, &out, &errOut), "no directory")
}
