package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"github.com/minikafka/minikafka/broker/harness"
)

// requireVersion reads a module's version from a go.mod file ("" when
// absent), for the report's setup lines.
func requireVersion(gomod, module string) string {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(module) + `\s+(v\S+)`)
	if m := re.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

// buildBrokerAt builds cmd/broker into the bench's binary directory, at
// git ref when not "" (see harness.BuildBroker).
func buildBrokerAt(ctx context.Context, e *env, ref string) (string, error) {
	tmp, err := e.binDir()
	if err != nil {
		return "", err
	}
	bin, err := harness.BuildBroker(ctx, tmp, ref, e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, err)
	}
	return bin, err
}

// gitCommit is the commit ref names, abbreviated ("?" when git cannot tell).
func gitCommit(ctx context.Context, ref string) string {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short=12", ref+"^{commit}").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}
