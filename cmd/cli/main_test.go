package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/interop/interoptest"
)

// targets are the servers every CLI test runs against: kfake as the
// reference and our broker (the engine does not matter to the CLI).
func targets() []interoptest.Target {
	return []interoptest.Target{interoptest.Kfake, interoptest.Broker("memory")}
}

// eachTarget runs fn once per server, each on a fresh one.
func eachTarget(t *testing.T, partitions int32, fn func(t *testing.T, addr string)) {
	for _, tg := range targets() {
		t.Run(tg.Name, func(t *testing.T) {
			fn(t, tg.Start(t, partitions).Addr)
		})
	}
}

type result struct {
	code   int
	stdout string
	stderr string
}

// cli runs the command line against addr with stdin, as main would.
func cli(t *testing.T, addr, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cliCtx(ctx, addr, stdin, args...)
}

func cliCtx(ctx context.Context, addr, stdin string, args ...string) result {
	var out, errOut bytes.Buffer
	e := &env{
		brokers: addr,
		timeout: 10 * time.Second,
		stdin:   strings.NewReader(stdin),
		stdout:  &out,
		stderr:  &errOut,
	}
	code := run(ctx, e, args)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// ok runs the command and requires exit code 0.
func ok(t *testing.T, addr, stdin string, args ...string) string {
	t.Helper()
	r := cli(t, addr, stdin, args...)
	require.Equal(t, 0, r.code, "cli %q failed: stderr=%s", args, r.stderr)
	return r.stdout
}

func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, 2, "usage: cli"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"produce without topic", []string{"produce"}, 2, "needs a TOPIC"},
		{"produce bad acks", []string{"produce", "t", "-acks", "2", "v"}, 2, "-acks"},
		{"produce bad codec", []string{"produce", "-compression", "brotli", "t", "v"}, 2, "brotli"},
		{"consume two topics", []string{"consume", "a", "b"}, 2, "exactly one TOPIC"},
		{"consume negative n", []string{"consume", "a", "-n", "-1"}, 2, "-n"},
		{"topics without verb", []string{"topics"}, 2, "create, list"},
		{"topics bad verb", []string{"topics", "rename"}, 2, "rename"},
		{"unknown flag", []string{"produce", "-nope", "t"}, 2, "-nope"},
		{"help", []string{"-h"}, 0, "commands:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Nothing listens here: usage errors must be reported before dialing.
			r := cli(t, "127.0.0.1:1", "", c.args...)
			assert.Equal(t, c.code, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, c.want)
		})
	}
}

func TestNoBrokerIsAnError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	e := &env{brokers: "127.0.0.1:1", timeout: time.Second, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	code := run(ctx, e, []string{"meta"})
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "cli meta:")
}

func TestParseInterleaved(t *testing.T) {
	cases := []struct {
		args    []string
		wantPos []string
		wantKey string
	}{
		{[]string{"t", "-key", "k", "a", "b"}, []string{"t", "a", "b"}, "k"},
		{[]string{"-key", "k", "t"}, []string{"t"}, "k"},
		{[]string{"t", "a", "-key=k"}, []string{"t", "a"}, "k"},
		{[]string{"t", "--", "-key", "x"}, []string{"t", "-key", "x"}, ""},
		{nil, nil, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) {
			var e env
			fsKey := ""
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			e.addGlobal(fs)
			fs.StringVar(&fsKey, "key", "", "")
			pos, err := parseInterleaved(fs, c.args)
			require.NoError(t, err)
			assert.Equal(t, c.wantPos, pos)
			assert.Equal(t, c.wantKey, fsKey)
		})
	}
}
