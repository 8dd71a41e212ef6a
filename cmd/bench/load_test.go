package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/interop/interoptest"
)

func loadCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestLoadUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"stray argument", []string{"produce", "extra"}, 2, "unexpected arguments"},
		{"bad flag", []string{"consume", "-frobs"}, 2, "-frobs"},
		{"bad from", []string{"consume", "-brokers", "127.0.0.1:1", "-from", "middle"}, 2, "-from"},
		{"bad fetch bytes", []string{"consume", "-fetch-max-bytes", "0"}, 2, "positive"},
		{"e2e small records", []string{"e2e", "-record-size", "4"}, 2, "-record-size"},
		{"help", []string{"produce", "-help"}, 0, "-in-flight"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := loadCmd(t, c.args...)
			assert.Equal(t, c.code, code, stderr)
			assert.Contains(t, stderr, c.want)
		})
	}
}

// TestProduceConsumeE2E runs the three workload commands on kfake and
// checks their JSON agrees with what was asked.
func TestProduceConsumeE2E(t *testing.T) {
	addr := interoptest.Kfake.Start(t, 1).Addr
	dir := t.TempDir()
	pj := filepath.Join(dir, "produce.json")
	code, out, stderr := loadCmd(t, "produce", "-brokers", addr, "-topic", "lg", "-partitions", "4",
		"-records", "3000", "-record-size", "64", "-keys", "7", "-compression", "lz4", "-json", pj, "-progress=false")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "produce: 3000 records")
	var pr struct {
		Config load.ProduceConfig
		Result load.ProduceResult
	}
	readJSON(t, pj, &pr)
	assert.Equal(t, int64(3000), pr.Result.Records)
	assert.Equal(t, "lz4", pr.Config.Compression)
	assert.Equal(t, int64(3000), pr.Result.Latency.Count)

	code, out, stderr = loadCmd(t, "consume", "-brokers", addr, "-topic", "lg", "-records", "3000", "-json", "-", "-progress=false")
	require.Equal(t, 0, code, stderr)
	var cr struct{ Result load.ConsumeResult }
	require.NoError(t, json.NewDecoder(bytes.NewReader(afterFirstLine(out))).Decode(&cr), out)
	assert.Equal(t, int64(3000), cr.Result.Records)

	code, out, stderr = loadCmd(t, "e2e", "-brokers", addr, "-topic", "lg", "-partitions", "4", "-records", "500", "-rate", "5000", "-progress=false")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "end-to-end")
	assert.Contains(t, out, "consume: 500 records")
}

func TestProduceToUnreachableBrokerFails(t *testing.T) {
	code, _, stderr := loadCmd(t, "produce", "-brokers", "127.0.0.1:1", "-partitions", "0", "-records", "1", "-delivery-timeout", "1s", "-progress=false")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "records failed")
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}

// afterFirstLine skips the human summary printed before JSON on stdout.
func afterFirstLine(s string) []byte {
	i := bytes.IndexByte([]byte(s), '{')
	if i < 0 {
		return nil
	}
	return []byte(s[i:])
}
