package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProduceArgsConsumeFromBeginning(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "args", "-partitions", "1")
		ok(t, addr, "", "produce", "args", "one", "two", "three")
		ok(t, addr, "", "-brokers", addr, "produce", "args", "-key", "k", "four")
		out := ok(t, addr, "", "consume", "args", "-from-beginning", "-n", "4", "-keys", "-key-sep", "=")
		assert.Equal(t, []string{"=one", "=two", "=three", "k=four"}, lines(out))
	})
}

// TestProduceAutoCreates: producing to a topic that does not exist creates
// it on a broker that auto-creates topics, as kcat's produce does.
func TestProduceAutoCreates(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "produce", "fresh", "born")
		out := ok(t, addr, "", "consume", "fresh", "-from-beginning", "-n", "1")
		assert.Equal(t, []string{"born"}, lines(out))
	})
}

func TestProduceStdinLines(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "stdin", "-partitions", "1")
		in := "a:1\nb:2\nno-delimiter\n\nlast:with:colons\n"
		ok(t, addr, in, "produce", "stdin", "-key-delim", ":")
		out := ok(t, addr, "", "consume", "-from-beginning", "-n", "5", "-keys", "-offsets", "stdin")
		assert.Equal(t, []string{
			"0@0\ta\t1",
			"0@1\tb\t2",
			"0@2\t\tno-delimiter",
			"0@3\t\t",
			"0@4\tlast\twith:colons",
		}, lines(out))
	})
}

func TestProduceToPartitionAndConsumeOnePartition(t *testing.T) {
	eachTarget(t, 3, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "parts", "-partitions", "3")
		for p := range 3 {
			ok(t, addr, "", "produce", "parts", "-partition", strconv.Itoa(p), fmt.Sprintf("p%d-a", p), fmt.Sprintf("p%d-b", p))
		}
		out := ok(t, addr, "", "consume", "parts", "-partition", "2", "-from-beginning", "-n", "2", "-offsets")
		assert.Equal(t, []string{"2@0\tp2-a", "2@1\tp2-b"}, lines(out))
	})
}

func TestProduceEveryCodecAndAcks(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			for _, acks := range []string{"all", "1"} {
				topic := "codec-" + codec + "-" + acks
				ok(t, addr, "", "topics", "create", topic, "-partitions", "1")
				value := strings.Repeat(codec, 50)
				ok(t, addr, "", "produce", topic, "-compression", codec, "-acks", acks, value, value+"!")
				out := ok(t, addr, "", "consume", topic, "-from-beginning", "-n", "2")
				assert.Equal(t, []string{value, value + "!"}, lines(out), "codec %s acks %s", codec, acks)
			}
		}
	})
}

func TestProduceVerbosePrintsOffsets(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "verbose", "-partitions", "1")
		out := ok(t, addr, "", "produce", "-v", "verbose", "x", "y")
		assert.Equal(t, []string{"verbose[0]@0", "verbose[0]@1"}, lines(out))
	})
}

// TestConsumeFromEnd: without -from-beginning only records produced after
// the consumer starts are printed.
func TestConsumeFromEnd(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "tail", "-partitions", "1")
		ok(t, addr, "", "produce", "tail", "old")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done := make(chan result, 1)
		go func() { done <- cliCtx(ctx, addr, "", "consume", "tail", "-n", "1") }()
		// The consumer's start position is not observable, so keep producing
		// until it prints something; it must never be "old".
		var r result
		for waiting := true; waiting; {
			ok(t, addr, "", "produce", "tail", "new")
			select {
			case r = <-done:
				waiting = false
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal("consumer never printed a record")
			}
		}
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, []string{"new"}, lines(r.stdout))
	})
}

func TestConsumeIdle(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "idle", "-partitions", "1")
		ok(t, addr, "", "produce", "idle", "only")
		r := cli(t, addr, "", "consume", "idle", "-from-beginning", "-idle", "500ms")
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, []string{"only"}, lines(r.stdout))

		r = cli(t, addr, "", "consume", "idle", "-from-beginning", "-n", "2", "-idle", "500ms")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "after 1 of 2 records")
	})
}

// A group consumer commits what it printed: a second run in the same group
// resumes after it, and `groups describe` shows the committed offset.
func TestConsumeGroupCommitsWhatItPrinted(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "grouped", "-partitions", "1")
		ok(t, addr, "", "produce", "grouped", "r1", "r2", "r3", "r4", "r5")
		out := ok(t, addr, "", "consume", "grouped", "-group", "g1", "-from-beginning", "-n", "2")
		assert.Equal(t, []string{"r1", "r2"}, lines(out))
		out = ok(t, addr, "", "consume", "grouped", "-group", "g1", "-from-beginning", "-n", "3")
		assert.Equal(t, []string{"r3", "r4", "r5"}, lines(out), "the second member resumes after the committed offset")
		out = ok(t, addr, "", "groups", "describe", "g1")
		assert.Contains(t, out, "grouped")
	})
}

func TestConsumeGroupRefusesPartition(t *testing.T) {
	r := cli(t, "127.0.0.1:1", "", "consume", "t", "-group", "g", "-partition", "0")
	assert.NotZero(t, r.code, "-group with -partition is a usage error")
	assert.Contains(t, r.stderr, "-group and -partition")
}
