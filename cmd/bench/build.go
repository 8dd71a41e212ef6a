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

// buildBroker builds ./cmd/broker into a temporary directory.
func buildBroker(ctx context.Context, e *env) (string, error) { return buildBrokerAt(ctx, e, "") }

// buildBrokerAt builds cmd/broker into the bench's binary directory: from
// the working tree when ref is "", else as the module was at git ref, from
// a copy of that tree (git archive): the older build a rolling upgrade
// starts on.
func buildBrokerAt(ctx context.Context, e *env, ref string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	tmp, err := e.binDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "broker")
	if ref != "" {
		src := filepath.Join(tmp, "src")
		if err := os.Mkdir(src, 0o755); err != nil {
			return "", err
		}
		archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, ref, src)
		if b, err := archive.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git archive %s: %w: %s", ref, err, strings.TrimSpace(string(b)))
		}
		root = src
	}
	if err := goBuild(ctx, root, "./cmd/broker", bin, e.stderr); err != nil {
		fmt.Fprintln(e.stderr, err)
		return "", err
	}
	return bin, nil
}

// gitCommit is the commit ref names, abbreviated ("?" when git cannot tell).
func gitCommit(ctx context.Context, ref string) string {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short=12", ref+"^{commit}").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}
