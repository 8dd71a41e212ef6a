package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickRunWritesBothReports(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results")
	var stderr bytes.Buffer
	err := run([]string{"-quick", "-engines", "memory,raw", "-records", "3000", "-append-time", "10ms",
		"-progress=false", "-dir", t.TempDir(), "-out", out}, &stderr)
	require.NoError(t, err, stderr.String())

	md, err := os.ReadFile(filepath.Join(out, "engines.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "-engines memory,raw", "the report names its command line")
	assert.Contains(t, string(md), "| memory |")

	var res struct {
		Config struct {
			Records int64 `json:"records"`
			Reps    int   `json:"reps"`
		} `json:"config"`
		Subjects []struct {
			Name string `json:"name"`
		} `json:"subjects"`
	}
	b, err := os.ReadFile(filepath.Join(out, "engines.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, int64(3000), res.Config.Records)
	assert.Equal(t, 1, res.Config.Reps)
	require.Len(t, res.Subjects, 2)
	assert.Equal(t, "raw", res.Subjects[0].Name)
	assert.Contains(t, stderr.String(), "SKIP segment", "targets are printed")

	again := filepath.Join(t.TempDir(), "again")
	require.NoError(t, run([]string{"-render", filepath.Join(out, "engines.json"), "-out", again}, &stderr))
	md2, err := os.ReadFile(filepath.Join(again, "engines.md"))
	require.NoError(t, err)
	assert.Equal(t, string(md), string(md2), "the JSON holds everything the report shows")
}

func TestBadFlagsAndEngines(t *testing.T) {
	cases := [][]string{
		{"-no-such-flag"},
		{"-quick", "-progress=false", "-engines", "nope"},
		{"-render", "/no/such/engines.json"},
	}
	for _, args := range cases {
		t.Run(args[len(args)-1], func(t *testing.T) {
			args = append(args, "-out", t.TempDir(), "-dir", t.TempDir())
			assert.Error(t, run(args, &bytes.Buffer{}))
		})
	}
}
