package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// childEnv makes the test binary a child that listens, prints its address
// and serves until SIGTERM, so the tests need no other program.
const childEnv = "PROC_TEST_CHILD"

func listen() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ln.Close()
	fmt.Println(ln.Addr())
	fmt.Fprintln(os.Stderr, "child: serving")
	<-ctx.Done()
	return 0
}

func startSelf(t *testing.T) *Child {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(childEnv, "1")
	c, err := StartChild(context.Background(), ChildConfig{Path: self, Args: []string{"-test.run=^$"}, Ready: 20 * time.Second})
	require.NoError(t, err)
	return c
}

func TestStartMeasureStop(t *testing.T) {
	c := startSelf(t)
	assert.NotEmpty(t, c.Addr())
	rss, err := c.PeakRSS()
	require.NoError(t, err)
	assert.Positive(t, rss)
	cpu, err := CPU(c.Pid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, cpu, 0.0)
	require.Eventually(t, func() bool { return strings.Contains(c.LastWords(), "child: serving") }, 10*time.Second, time.Millisecond)
	require.NoError(t, c.Stop(), "SIGTERM ends the child cleanly")
	<-c.Exited()
	err = c.Stop()
	require.Error(t, err, "a second stop reports the child is gone")
	assert.Contains(t, err.Error(), "child: serving", "with its last words")
}

func TestKill(t *testing.T) {
	c := startSelf(t)
	require.NoError(t, c.Kill())
	assert.Error(t, c.Kill(), "a dead child cannot be killed again")
}

func TestChildThatExitsIsAnError(t *testing.T) {
	_, err := StartChild(context.Background(), ChildConfig{Path: "/bin/false", Ready: 5 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no address")

	addr, err := FreeAddr()
	require.NoError(t, err)
	_, err = StartChild(context.Background(), ChildConfig{Path: "/bin/sh", Args: []string{"-c", "echo no such engine >&2; exit 3"},
		Addr: addr, Ready: 5 * time.Second})
	require.Error(t, err, "a child that never listens")
	assert.Contains(t, err.Error(), "exit status 3")
	assert.Contains(t, err.Error(), "no such engine", "the child's last words are in the error")
}

func TestTailKeepsTheEnd(t *testing.T) {
	var tl tail
	_, _ = tl.Write([]byte(strings.Repeat("x", 1000)))
	_, _ = tl.Write([]byte("\nthe end\n"))
	s := tl.String()
	assert.LessOrEqual(t, len(s), tailBytes)
	assert.True(t, strings.HasSuffix(s, "x the end"), s)
}

func TestParseVmHWM(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want int64
		err  bool
	}{
		{"normal", "Name:\tx\nVmPeak:\t  100 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1 kB\n", 2048 << 10, false},
		{"missing", "Name:\tx\n", 0, true},
		{"bad unit", "VmHWM:\t 5 MB\n", 0, true},
		{"bad number", "VmHWM:\t x kB\n", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseVmHWM(strings.NewReader(c.in))
			if c.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestParseStatCPU(t *testing.T) {
	cases := []struct {
		name string
		line string
		want float64
		err  bool
	}{
		{
			name: "name with spaces and parentheses",
			line: "1234 (my (odd) proc) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 130 0 0 20 0 9 0 100 1000 200",
			want: 3.8,
		},
		{name: "too short", line: "1 (x) S 1 2 3", err: true},
		{name: "no name", line: "1 x S", err: true},
		{name: "not a number", line: "1 (x) S 1 1 1 0 -1 0 0 0 0 0 ab 1 0 0", err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseStatCPU(c.line)
			if c.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, c.want, got, 1e-9)
		})
	}
}

func TestParseIO(t *testing.T) {
	in := "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 4096\n"
	got, err := parseIO(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, IO{ReadBytes: 4096, WriteBytes: 8192, CancelledWriteBytes: 4096}, got)
	later := IO{WriteBytes: 8192 + 10000, CancelledWriteBytes: 4096 + 1000}
	assert.Equal(t, int64(9000), later.Written(got), "cancelled writes never reach storage")

	_, err = parseIO(strings.NewReader("rchar: 10\n"))
	assert.Error(t, err, "no byte counters: accounting off")
	_, err = parseIO(strings.NewReader("read_bytes: x\nwrite_bytes: 1\ncancelled_write_bytes: 0\n"))
	assert.Error(t, err)
}
