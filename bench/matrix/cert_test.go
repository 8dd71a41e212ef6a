package matrix

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// certJSON is go test -json output for a package whose conformance suite
// has a pass, a skip and a failure, and whose crash suite died in the
// middle of a subtest (no result line).
const certJSON = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestConformance"}
{"Action":"run","Package":"p","Test":"TestConformance/Append"}
{"Action":"pass","Package":"p","Test":"TestConformance/Append"}
{"Action":"run","Package":"p","Test":"TestConformance/Reopen"}
{"Action":"output","Package":"p","Test":"TestConformance/Reopen","Output":"    cases.go:10: not durable: nothing survives Close\n"}
{"Action":"output","Package":"p","Test":"TestConformance/Reopen","Output":"--- SKIP: TestConformance/Reopen (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestConformance/Reopen"}
{"Action":"run","Package":"p","Test":"TestConformance/Read"}
{"Action":"output","Package":"p","Test":"TestConformance/Read","Output":"    cases.go:20: read 3: got 2 batches\n"}
{"Action":"fail","Package":"p","Test":"TestConformance/Read"}
{"Action":"fail","Package":"p","Test":"TestConformance"}
{"Action":"run","Package":"p","Test":"TestCrash"}
{"Action":"run","Package":"p","Test":"TestCrash/Kill"}
{"Action":"pass","Package":"p","Test":"TestCrash/Kill"}
{"Action":"run","Package":"p","Test":"TestCrash/PowerLoss"}
{"Action":"run","Package":"p","Test":"TestCrash/PowerLoss/CallsFail"}
{"Action":"output","Package":"p","Test":"TestCrash/PowerLoss/CallsFail","Output":"panic: engine goroutine\n"}
not json: a line the build printed
{"Action":"output","Package":"p","Output":"FAIL\tp\t1.0s\n"}
`

func TestParseTestJSON(t *testing.T) {
	tests, pkgOut, cached := parseTestJSON([]byte(certJSON))
	assert.False(t, cached)
	assert.Equal(t, []string{"FAIL\tp\t1.0s\n"}, pkgOut)
	conf := suiteOf(tests, "TestConformance", "enginetest")
	assert.True(t, conf.Ran)
	assert.Equal(t, []int{1, 1, 1}, []int{conf.Pass, conf.Skip, conf.Fail})
	require.Len(t, conf.Cases, 3)
	assert.Equal(t, Case{Name: "Append", Result: "pass"}, conf.Cases[0])
	assert.Equal(t, Case{Name: "Read", Result: "fail", Note: "cases.go:20: read 3: got 2 batches"}, conf.Cases[1])
	assert.Equal(t, Case{Name: "Reopen", Result: "skip", Note: "cases.go:10: not durable: nothing survives Close"}, conf.Cases[2])

	crash := suiteOf(tests, "TestCrash", "crashtest")
	assert.Equal(t, []int{1, 0, 1}, []int{crash.Pass, crash.Skip, crash.Fail}, "a subtest without a result failed")
	assert.Equal(t, "PowerLoss/CallsFail", crash.Cases[1].Name)
	assert.Equal(t, "panic: engine goroutine", crash.Cases[1].Note)

	absent := suiteOf(tests, "TestOther", "other")
	assert.False(t, absent.Ran)

	_, _, cached = parseTestJSON([]byte(`{"Action":"output","Package":"p","Output":"ok  \tp\t(cached)\n"}`))
	assert.True(t, cached)
	_, pkgOut, _ = parseTestJSON([]byte(`{"ImportPath":"p","Action":"build-output","Output":"engine.go:1: undefined: x\n"}`))
	assert.Equal(t, "engine.go:1: undefined: x", note(pkgOut), "a build failure is said")
}

// TestCertifyRunsGoTest certifies the memory engine for real: a short go
// test of its conformance suite, whose package has no crash suite.
func TestCertifyRunsGoTest(t *testing.T) {
	root := moduleRoot(t)
	certs := Certify(context.Background(), CertConfig{ModuleDir: root, Engines: []string{"memory", "nosuch"}}, io.Discard)
	require.Len(t, certs, 2)
	mem := certs[0]
	assert.Empty(t, mem.Error)
	assert.True(t, mem.Suites[0].Ran)
	assert.Positive(t, mem.Suites[0].Pass)
	assert.Zero(t, mem.Suites[0].Fail)
	assert.False(t, mem.Suites[1].Ran, "the memory engine is not durable: no crash suite")
	assert.Contains(t, mem.Command, "./engines/memory")

	assert.NotEmpty(t, certs[1].Error, "an engine without a package is an error, said")
	assert.Contains(t, certs[1].Brief(), "error")
}

// moduleRoot walks up from the test's directory to go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/minikafka/minikafka\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test")
		dir = parent
	}
}

func TestLoadEnginesRef(t *testing.T) {
	dir := t.TempDir()
	ref, err := LoadEnginesRef(filepath.Join(dir, "missing.json"))
	require.NoError(t, err)
	assert.Nil(t, ref)

	path := filepath.Join(dir, "engines.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"date":"d","commit":"c","targets":[
		{"name":"segment durable append, 256 writers, vs raw","value":0.9,"unit":"×"},
		{"name":"segment durable append, 256 writers, p99 latency","value":0.01,"unit":"ms"}]}`), 0o644))
	ref, err = LoadEnginesRef(path)
	require.NoError(t, err)
	require.NotNil(t, ref)
	assert.Equal(t, []RefCheck{{Name: "segment durable append, 256 writers, vs raw", Value: 0.9, Unit: "×"}}, ref.Checks, "only the ratios against the raw loop")

	require.NoError(t, os.WriteFile(path, []byte(`{"started":"2026-12-01T10:00:00Z","commit":"c","checks":[
		{"name":"segment bulk ingest vs raw","value":0.98,"unit":"×"}]}`), 0o644))
	ref, err = LoadEnginesRef(path)
	require.NoError(t, err)
	assert.Equal(t, "2026-12-01T10:00:00Z", ref.Date)
	assert.Equal(t, []RefCheck{{Name: "segment bulk ingest vs raw", Value: 0.98, Unit: "×"}}, ref.Checks, "the checks as the engines profile writes them")

	require.NoError(t, os.WriteFile(path, []byte("{"), 0o644))
	_, err = LoadEnginesRef(path)
	assert.Error(t, err)
}
