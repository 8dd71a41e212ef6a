package logbench_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench/logbench"
	"github.com/minikafka/minikafka/bench/result"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
	"github.com/minikafka/minikafka/engines/pebble"
)

// TestMain serves the engines' kill -9 children from this test binary, as
// cmd/bench does from its own.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == logbench.ChildCmd {
		if err := logbench.ServeChild(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tiny is the whole pipeline on sizes that run in a moment. No figure is
// asserted: only that every workload ran and counted what it should.
func tiny(t *testing.T, subjects ...string) logbench.Config {
	c := logbench.Quick()
	c.Subjects = subjects
	c.Writers = []int{1, 8}
	c.AppendDuration = 20 * time.Millisecond
	c.Records = 5_500 // a short last batch
	c.Dir = t.TempDir()
	c.Self = os.Args[0]
	return c
}

func TestRunWholePipeline(t *testing.T) {
	c := tiny(t, memory.Name, logbench.RawName, logbench.RawOverwriteName, logbench.BadgerTxnName, pebble.Name)
	res, err := logbench.Run(c)
	require.NoError(t, err)

	var names []string
	for _, sr := range res.Subjects {
		names = append(names, sr.Name)
	}
	assert.Equal(t, []string{logbench.RawName, logbench.RawOverwriteName, pebble.Name, logbench.BadgerTxnName, memory.Name},
		names, "report order")
	want := map[string][]string{
		logbench.RawName:          {"append-1", "append-8", "ingest", "read", "catch-up"},
		logbench.RawOverwriteName: {"append-1", "append-8", "ingest", "catch-up"},
		pebble.Name: {"append-1", "append-8", "ingest", "reopen", "reopen-warm", "read",
			"kill-restart", "kill-restart-cold", "truncate-1", "truncate-10", "truncate-50", "delete-half", "catch-up"},
		logbench.BadgerTxnName: {"append-1", "append-8"},
		memory.Name:            {"append-1", "append-8", "ingest", "read"},
	}
	for _, sr := range res.Subjects {
		var got []string
		for _, s := range samples(res, sr.Name) {
			got = append(got, s.Workload)
			assert.Empty(t, s.Err, "%s %s", sr.Name, s.Workload)
			switch {
			case strings.HasPrefix(s.Workload, "append-"):
				assert.Positive(t, s.Records, "%s %s", sr.Name, s.Workload)
				require.NotNil(t, s.Latency)
				assert.Equal(t, s.Records, s.Latency.Count)
			case s.Workload == logbench.WorkloadIngest || s.Workload == logbench.WorkloadRead:
				assert.Equal(t, c.Records, s.Records, "%s %s", sr.Name, s.Workload)
				assert.Equal(t, c.Records*int64(c.RecordBytes), s.PayloadBytes)
			}
		}
		assert.Equal(t, want[sr.Name], got, sr.Name)
	}
	ing := res.Cell(logbench.RawName, logbench.WorkloadIngest).Reps[0]
	require.NotNil(t, ing.Usage)
	assert.Equal(t, c.Records*int64(c.RecordBytes), ing.Usage.Apparent, "the raw file is the payload")
	assert.Equal(t, "open", res.Cell(memory.Name, logbench.WorkloadRead).Reps[0].Cache)
	assert.True(t, res.Cell(logbench.RawName, logbench.WorkloadRead).Reps[0].Lent, "raw reads into one buffer")
	assert.False(t, res.Cell(pebble.Name, logbench.WorkloadRead).Reps[0].Lent, "pebble is no engine.BufferReader")
	assert.Nil(t, res.Cell(logbench.RawOverwriteName, logbench.WorkloadIngest).Reps[0].Usage, "a ring has no space figures")
	assert.Positive(t, res.Cell(pebble.Name, logbench.WorkloadReopen).Reps[0].Seconds)
	assert.Equal(t, "warm", res.Cell(pebble.Name, logbench.WorkloadReopenWarm).Reps[0].Cache)

	one := res.Result()
	assert.Empty(t, one.Checks, "no segment engine here, so none of its targets")
	assert.NotEmpty(t, one.Ratios(), "pebble and memory against raw")

	res.Command, res.Commit = "test", "none"
	one = res.Result()
	md := string(one.Markdown())
	for _, s := range []string{"## Durable append, 8 writers", "## Durable append, 1 writer\n", "## Bulk ingest",
		"## Sequential read", "## Reopen to first read, cold", "## Restart after kill -9, warm", "## Truncate of the last 10 %",
		"## DeleteBefore of the oldest half", "## Follower catch-up", "| raw |", "| pebble |", "| badger-txn |", "| memory |"} {
		assert.Contains(t, md, s)
	}
	_, err = json.Marshal(res)
	require.NoError(t, err, "results must encode as JSON (no NaN)")

	entries, err := os.ReadDir(c.Dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "scratch data removed")

	out := t.TempDir()
	require.NoError(t, one.Write(out))
	_, file := result.Files("engines")
	again, err := result.Read(filepath.Join(out, file))
	require.NoError(t, err)
	assert.Equal(t, md, string(again.Markdown()), "the JSON holds everything the report shows")
}

// samples lists a subject's samples in the order they ran.
func samples(res *logbench.Results, subject string) []logbench.Sample {
	var out []logbench.Sample
	for _, c := range res.Cells {
		if c.Target == subject {
			out = append(out, c.Reps...)
		}
	}
	return out
}

func TestRunRefusesUnknownSubject(t *testing.T) {
	_, err := logbench.Run(tiny(t, "no-such-engine"))
	require.ErrorIs(t, err, engine.ErrUnknownEngine)
}

func TestRunRefusesBadConfig(t *testing.T) {
	cases := []struct {
		name string
		edit func(*logbench.Config)
	}{
		{"no reps", func(c *logbench.Config) { c.Reps = 0 }},
		{"no records", func(c *logbench.Config) { c.Records = 0 }},
		{"zero writers", func(c *logbench.Config) { c.Writers = []int{0} }},
		{"batch smaller than its stamp", func(c *logbench.Config) { c.RecordBytes, c.BatchRecords = 1, 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := tiny(t, memory.Name)
			c.edit(&cfg)
			_, err := logbench.Run(cfg)
			assert.Error(t, err)
		})
	}
}

// failing is an engine whose every Append fails once the log holds a few
// batches: the run must record the failure and go on.
const failingName = "logbenchtest-failing"

func init() {
	engine.Register(engine.Driver{
		Name: failingName,
		Caps: engine.Capabilities{Durable: true},
		Open: func(dir string, opts engine.Options) (engine.LogEngine, error) {
			return &failing{LogEngine: memory.Open(opts)}, nil
		},
	})
}

type failing struct{ engine.LogEngine }

var errInjected = errors.New("injected append failure")

func (f *failing) Append(b engine.Batch) error {
	if b.BaseOffset >= 3 {
		return errInjected
	}
	return f.LogEngine.Append(b)
}

func TestFailuresAreRecordedNotFatal(t *testing.T) {
	res, err := logbench.Run(tiny(t, failingName, memory.Name))
	require.NoError(t, err)
	require.Contains(t, res.Result().Workload.Servers, failingName)
	for _, s := range samples(res, failingName) {
		assert.NotEmpty(t, s.Err, "%s must fail", s.Workload)
	}
	assert.Contains(t, res.Cell(failingName, logbench.WorkloadIngest).Reps[0].Err, errInjected.Error())
	assert.Equal(t, "ingest failed", res.Cell(failingName, logbench.WorkloadReopen).Reps[0].Err)
	for _, s := range samples(res, memory.Name) {
		assert.Empty(t, s.Err, "the other engine still runs: %s", s.Workload)
	}
	md := string(res.Result().Markdown())
	assert.Contains(t, md, errInjected.Error(), "the failure, in the report")
}

func TestRawGroupCommitKeepsEveryRecord(t *testing.T) {
	dir := t.TempDir()
	w, err := logbench.RawSubject(100).Writer(dir)
	require.NoError(t, err)
	const writers, each, size = 16, 50, 100
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			rec := []byte(fmt.Sprintf("%-*d", size, i))
			for range each {
				if err := w.Write(rec); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		require.NoError(t, <-errs)
	}
	require.NoError(t, w.Close())
	data, err := os.ReadFile(filepath.Join(dir, "raw.log"))
	require.NoError(t, err)
	require.Len(t, data, writers*each*size)
	counts := map[string]int{}
	for i := 0; i < len(data); i += size {
		counts[strings.TrimSpace(string(data[i:i+size]))]++
	}
	for i := range writers {
		assert.Equal(t, each, counts[fmt.Sprint(i)], "writer %d: records are whole and none is lost", i)
	}
}

func TestEngineScanChecksStamps(t *testing.T) {
	cases := []struct {
		name    string
		batches func() []engine.Batch
		wantErr string
	}{
		{"stamped", func() []engine.Batch {
			return []engine.Batch{batch(0, 2, 0), batch(2, 3, 2)}
		}, ""},
		{"stamp of another batch", func() []engine.Batch {
			return []engine.Batch{batch(0, 2, 0), batch(2, 3, 7)}
		}, "carries stamp 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			sub, err := logbench.EngineSubject(memory.Name)
			require.NoError(t, err)
			in, err := sub.Ingester(dir)
			require.NoError(t, err)
			defer in.Close()
			var recs int64
			for _, b := range c.batches() {
				require.NoError(t, in.WriteBatch(b.Data, b.Records))
				recs += int64(b.Records)
			}
			records, _, err := in.(logbench.Scanner).Scan()
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, recs, records)
		})
	}
}

func batch(base int64, records int32, stamp uint64) engine.Batch {
	data := make([]byte, 16)
	for i := range 8 {
		data[i] = byte(stamp >> (56 - 8*i))
	}
	return engine.Batch{BaseOffset: base, Records: records, Data: data}
}

func TestIngest(t *testing.T) {
	c := logbench.Quick()
	s := logbench.Ingest("pebble", t.TempDir(), c)
	require.Empty(t, s.Err)
	assert.Equal(t, c.Records, s.Records)
	assert.Equal(t, c.Records*int64(c.RecordBytes), s.PayloadBytes)
	assert.Positive(t, s.Figures()["mb_per_s"])
	assert.NotEmpty(t, logbench.Ingest("no-such-engine", t.TempDir(), c).Err)
}
