package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/harness"
)

// TestEnvironment: every flag has a MINIKAFKA_ variable, the command line
// wins over it, and a bad value is refused naming the variable.
func TestEnvironment(t *testing.T) {
	t.Setenv("MINIKAFKA_NODE_ID", "7")
	t.Setenv("MINIKAFKA_MIN_INSYNC_REPLICAS", "2")
	t.Setenv("MINIKAFKA_ENGINE", "pebble")
	o, err := parseFlags([]string{"-engine", "badger"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, int32(7), o.cfg.NodeID)
	assert.Equal(t, 2, o.cfg.Cluster.MinInsyncReplicas)
	assert.Equal(t, "badger", o.cfg.Engine, "the command line wins")

	t.Setenv("MINIKAFKA_PARTITIONS", "many")
	_, err = parseFlags(nil, io.Discard)
	require.ErrorContains(t, err, "MINIKAFKA_PARTITIONS")
}

func TestOrdinal(t *testing.T) {
	for host, want := range map[string]int{"minikafka-0": 0, "minikafka-12": 12, "my-kafka-2": 2} {
		got, err := ordinal(host)
		require.NoError(t, err, host)
		assert.Equal(t, want, got, host)
	}
	for _, host := range []string{"minikafka", "minikafka-", "minikafka-x"} {
		_, err := ordinal(host)
		assert.Error(t, err, host)
	}
}

// TestHealthcheck: /healthz says "starting" (503) until the broker is
// registered and unfenced, here never, since the two other voters of its
// quorum do not exist; a one-node broker says ok, and "broker healthcheck"
// exits with the answer's verdict, finding the address in the environment
// as an image's HEALTHCHECK does.
func TestHealthcheck(t *testing.T) {
	ctl, err := harness.FreeAddr()
	require.NoError(t, err)
	_, metrics, _ := startRun(t, "-dir", t.TempDir(), "-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0",
		"-controller-addr", ctl, "-controllers", "1@"+ctl+",2@127.0.0.1:1,3@127.0.0.1:2")
	code, body := get(t, "http://"+metrics+"/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "starting", strings.TrimSpace(body))
	var out strings.Builder
	assert.Error(t, healthcheck(context.Background(), []string{"-metrics-addr", metrics}, noEnv, &out), out.String())

	_, metrics, stop := startRun(t, "-dir", t.TempDir(), "-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0")
	env := func(name string) (string, bool) {
		if name == "MINIKAFKA_METRICS_ADDR" {
			return metrics, true
		}
		return "", false
	}
	require.Eventually(t, func() bool { return healthcheck(context.Background(), nil, env, io.Discard) == nil },
		30*time.Second, 20*time.Millisecond, "a one-node broker becomes healthy")
	require.NoError(t, stop())
	assert.Error(t, healthcheck(context.Background(), nil, env, io.Discard), "nobody answers once it stopped")
	assert.ErrorContains(t, healthcheck(context.Background(), nil, noEnv, io.Discard), "MINIKAFKA_METRICS_ADDR")
}

func noEnv(string) (string, bool) { return "", false }
