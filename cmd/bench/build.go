package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// moduleRoot is the main module's directory, from `go env GOMOD`.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", usageErr("run from inside the mini-kafka module (go env GOMOD is empty)")
	}
	return filepath.Dir(gomod), nil
}

// goBuild builds pkg (a path relative to dir) into out with `go build`
// run in dir.
func goBuild(ctx context.Context, dir, pkg, out string, log io.Writer) error {
	fmt.Fprintf(log, "building %s in %s\n", pkg, dir)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %s (in %s): %w: %s", pkg, dir, err, strings.TrimSpace(string(b)))
	}
	return nil
}

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
