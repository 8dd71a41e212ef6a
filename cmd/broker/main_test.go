package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/group"
)

// The test binary doubles as the broker command for TestSIGTERM's child.
func TestMain(m *testing.M) {
	if args := os.Getenv("MINIKAFKA_BROKER_CHILD"); args != "" {
		os.Args = append([]string{"broker"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad sync policy", []string{"-sync", "sometimes"}, "unknown sync policy"},
		{"unknown engine", []string{"-engine", "nope", "-dir", t.TempDir(), "-addr", "127.0.0.1:0"}, "unknown engine"},
		{"zero partitions", []string{"-partitions", "0"}, "-partitions"},
		{"tiny frames", []string{"-max-frame-bytes", "10"}, "-max-frame-bytes"},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
		{"bad log level", []string{"-log-level", "loud", "-dir", t.TempDir()}, "-log-level"},
		{"bad advertised address", []string{"-advertised-addr", "nohostport", "-dir", t.TempDir(), "-addr", "127.0.0.1:0"}, "advertised"},
		{"session bounds crossed", []string{"-group-min-session-timeout", "10s", "-group-max-session-timeout", "5s"}, "-group-min-session-timeout"},
		{"empty groups", []string{"-group-max-size", "0"}, "-group-max-size"},
		{"negative retention", []string{"-offsets-retention", "-1h"}, "-offsets-retention"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// startRun runs the command in-process and returns its addresses and a
// function that stops it and returns run's result.
func startRun(t *testing.T, args ...string) (kafka, metrics string, stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	type addrs struct{ k, m net.Addr }
	ready := make(chan addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, testLog{t}, func(k, m net.Addr) { ready <- addrs{k, m} })
	}()
	select {
	case a := <-ready:
		if a.m != nil {
			metrics = a.m.String()
		}
		stopped := false
		stop = func() error {
			if stopped {
				return nil
			}
			stopped = true
			cancel()
			select {
			case err := <-done:
				return err
			case <-time.After(30 * time.Second):
				t.Fatal("broker did not stop")
				return nil
			}
		}
		t.Cleanup(func() { _ = stop() })
		return a.k.String(), metrics, stop
	case err := <-done:
		cancel()
		t.Fatalf("broker exited at start: %v", err)
	}
	return "", "", nil
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err, "GET %s", url)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestServeMetricsAndShutdown(t *testing.T) {
	dir := t.TempDir()
	addr, metrics, stop := startRun(t, "-engine", "segment", "-dir", dir, "-addr", "127.0.0.1:0",
		"-metrics-addr", "127.0.0.1:0", "-partitions", "2")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("cmd"), kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr())
	}

	code, body := get(t, "http://"+metrics+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	code, body = get(t, "http://"+metrics+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`minikafka_requests_total{api="Produce"}`,
		`minikafka_request_duration_seconds_bucket{api="Produce"`,
		`minikafka_open_connections`,
		`minikafka_sync_duration_seconds_count{engine="segment"}`,
		`minikafka_sync_rounds_total{engine="segment"}`,
		`minikafka_group_commit_batch_size_count{engine="segment"}`,
		`minikafka_disk_bytes{engine="segment"}`,
		`go_goroutines`,
	} {
		assert.Contains(t, body, want)
	}
	assert.Regexp(t, regexp.MustCompile(`minikafka_sync_rounds_total\{engine="segment"\} [1-9]`), body, "the engine's sync rounds were counted")

	// The client stays connected and idle: shutdown must not wait for it.
	require.NoError(t, stop())

	// Everything acknowledged is there after a restart.
	addr, _, _ = startRun(t, "-engine", "segment", "-dir", dir, "-addr", "127.0.0.1:0")
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("cmd"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	n := 0
	for n < 20 {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of 20", n)
		n += len(fs.Records())
	}
	assert.Equal(t, 20, n)
}

// TestSIGTERM runs the command as a child process with an idle client
// connected and checks that SIGTERM makes it exit cleanly.
func TestSIGTERM(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MINIKAFKA_BROKER_CHILD=-engine segment -dir "+dir+" -addr 127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	addrRE := regexp.MustCompile(`msg=serving addr=(\S+)`)
	lines := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && lines.Scan() {
		t.Log(lines.Text())
		if m := addrRE.FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	require.NotEmpty(t, addr, "the child said where it listens")
	go func() {
		for lines.Scan() {
			t.Log(lines.Text())
		}
	}()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("sig"), kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("acknowledged")}).FirstErr())

	// While the child runs, a second broker on its directory is refused.
	err = run(context.Background(), []string{"-engine", "segment", "-dir", dir, "-addr", "127.0.0.1:0"}, io.Discard, nil)
	require.ErrorContains(t, err, "in use by another broker")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "clean exit on SIGTERM")
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not exit after SIGTERM")
	}

	addr, _, _ = startRun(t, "-engine", "segment", "-dir", dir, "-addr", "127.0.0.1:0")
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("sig"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	fs := consumer.PollFetches(ctx)
	require.NoError(t, ctx.Err())
	require.Len(t, fs.Records(), 1, "the acknowledged record survived")
	assert.Equal(t, "acknowledged", string(fs.Records()[0].Value))
}

// TestGroupFlags: the group flags fill Config.Groups (whose effect on the
// coordinator broker's tests show), "0" meaning none or never as Kafka's
// settings do.
func TestGroupFlags(t *testing.T) {
	o, err := parseFlags([]string{
		"-group-min-session-timeout", "2s", "-group-max-session-timeout", "7s", "-group-max-size", "3",
		"-group-initial-rebalance-delay", "0", "-offsets-retention", "0",
	}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, broker.GroupConfig{
		MinSessionTimeout: 2 * time.Second, MaxSessionTimeout: 7 * time.Second, MaxMembers: 3,
		InitialRebalanceDelay: -1, OffsetsRetention: -1,
	}, o.cfg.Groups)

	o, err = parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, broker.GroupConfig{
		MinSessionTimeout: group.DefaultMinSessionTimeout, MaxSessionTimeout: group.DefaultMaxSessionTimeout,
		MaxMembers: group.DefaultMaxMembers, InitialRebalanceDelay: group.DefaultInitialRebalanceDelay,
		OffsetsRetention: group.DefaultOffsetsRetention,
	}, o.cfg.Groups, "the defaults are the coordinator's")
}
