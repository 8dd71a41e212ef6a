package matrix

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Suites are the contract suites an engine's package runs, by top-level
// test name (see engine/enginetest and engine/crashtest).
var Suites = []struct{ Test, Suite string }{
	{"TestConformance", "enginetest"},
	{"TestCrash", "crashtest"},
}

// CertConfig says how to run the certification suites.
type CertConfig struct {
	// ModuleDir is the root of the main module (where ./engines/NAME is).
	ModuleDir string
	Engines   []string
	// Fresh runs the tests again (-count=1) instead of accepting go's
	// cached results for unchanged code.
	Fresh bool
	// Timeout bounds one engine's go test (default 10 minutes).
	Timeout time.Duration
}

// Cert is what an engine's suites reported.
type Cert struct {
	Engine  string  `json:"engine"`
	Command string  `json:"command"`
	Suites  []Suite `json:"suites"`
	// Cached: go test reported cached results (the code did not change
	// since they were run).
	Cached  bool    `json:"cached"`
	Seconds float64 `json:"seconds"`
	// Error says why the suites could not run or did not finish (a build
	// failure, a panic, a timeout); suites that reported are kept.
	Error string `json:"error,omitempty"`
}

// Suite is one suite's results: counts over its leaf subtests.
type Suite struct {
	Name string `json:"name"`
	Test string `json:"test"`
	// Ran is false when the package does not run the suite.
	Ran   bool   `json:"ran"`
	Pass  int    `json:"pass"`
	Skip  int    `json:"skip"`
	Fail  int    `json:"fail"`
	Cases []Case `json:"cases"`
}

// Case is one leaf subtest.
type Case struct {
	Name   string `json:"name"`
	Result string `json:"result"` // pass, skip, fail
	// Note is the test's last line of output for a skip or a failure: the
	// reason.
	Note string `json:"note,omitempty"`
}

// Certify runs the suites of every engine, one go test at a time.
func Certify(ctx context.Context, cfg CertConfig, log io.Writer) []*Cert {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	var out []*Cert
	for _, e := range cfg.Engines {
		if ctx.Err() != nil {
			break
		}
		c := certifyOne(ctx, cfg, e)
		fmt.Fprintf(log, "  %s: %s\n", e, c.Brief())
		out = append(out, c)
	}
	return out
}

// Brief is a one-line summary for the log.
func (c *Cert) Brief() string {
	var parts []string
	for _, s := range c.Suites {
		if !s.Ran {
			parts = append(parts, s.Name+" not run")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d pass, %d skip, %d fail", s.Name, s.Pass, s.Skip, s.Fail))
	}
	if c.Error != "" {
		parts = append(parts, "error: "+c.Error)
	}
	return strings.Join(parts, "; ")
}

func certifyOne(ctx context.Context, cfg CertConfig, engine string) *Cert {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var names []string
	for _, s := range Suites {
		names = append(names, s.Test)
	}
	args := []string{"test", "-json", "-run", "^(" + strings.Join(names, "|") + ")$"}
	if cfg.Fresh {
		args = append(args, "-count=1")
	}
	args = append(args, "./engines/"+engine)
	c := &Cert{Engine: engine, Command: "go " + strings.Join(args, " ")}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = cfg.ModuleDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, runErr := cmd.Output()
	c.Seconds = time.Since(start).Seconds()
	events, pkgOut, cached := parseTestJSON(out)
	c.Cached = cached
	for _, s := range Suites {
		c.Suites = append(c.Suites, suiteOf(events, s.Test, s.Suite))
	}
	failed := 0
	for _, s := range c.Suites {
		failed += s.Fail
	}
	// go test exits 1 when a test fails: that is a result, not an error.
	if runErr != nil && (failed == 0 || ctx.Err() != nil) {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = note(pkgOut)
		}
		if msg == "" {
			msg = lastOutput(events)
		}
		c.Error = oneLine(fmt.Sprintf("%v: %s", runErr, msg))
	}
	return c
}

// testEvent is one line of go test -json (cmd/test2json).
type testEvent struct {
	Action string
	Test   string
	Output string
}

// testRecord is what the events say about one test.
type testRecord struct {
	result string
	output []string
}

// parseTestJSON collects each test's result and output lines, the output
// that belongs to no test (the package's, and a build failure's), and
// whether go test reported cached results. Lines that are not JSON are
// ignored.
func parseTestJSON(out []byte) (tests map[string]*testRecord, pkgOut []string, cached bool) {
	tests = map[string]*testRecord{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Test == "" {
			if ev.Action == "output" || ev.Action == "build-output" {
				pkgOut = append(pkgOut, ev.Output)
				cached = cached || strings.Contains(ev.Output, "(cached)")
			}
			continue
		}
		rec := tests[ev.Test]
		if rec == nil {
			rec = &testRecord{}
			tests[ev.Test] = rec
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			rec.result = ev.Action
		case "output":
			rec.output = append(rec.output, ev.Output)
		}
	}
	return tests, pkgOut, cached
}

// suiteOf counts the leaf subtests under top-level test top. A test that
// started and never reported a result (the binary died) counts as failed.
func suiteOf(tests map[string]*testRecord, top, name string) Suite {
	s := Suite{Name: name, Test: top}
	var leaves []string
	for t := range tests {
		if t != top && !strings.HasPrefix(t, top+"/") {
			continue
		}
		s.Ran = true
		if !hasChildren(tests, t) {
			leaves = append(leaves, t)
		}
	}
	slices.Sort(leaves)
	for _, t := range leaves {
		rec := tests[t]
		c := Case{Name: strings.TrimPrefix(strings.TrimPrefix(t, top), "/"), Result: rec.result}
		switch rec.result {
		case "pass":
			s.Pass++
		case "skip":
			s.Skip++
			c.Note = note(rec.output)
		default:
			c.Result = "fail"
			s.Fail++
			c.Note = note(rec.output)
		}
		if c.Name == "" {
			c.Name = top
		}
		s.Cases = append(s.Cases, c)
	}
	return s
}

func hasChildren(tests map[string]*testRecord, t string) bool {
	for u := range tests {
		if strings.HasPrefix(u, t+"/") {
			return true
		}
	}
	return false
}

// note is a test's last meaningful output line: its skip reason or the
// end of its failure, without the "--- SKIP" framing.
func note(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "FAIL") {
			continue
		}
		return oneLine(l)
	}
	return ""
}

func lastOutput(tests map[string]*testRecord) string {
	var last string
	for _, r := range tests {
		if n := note(r.output); n != "" {
			last = n
		}
	}
	return last
}
