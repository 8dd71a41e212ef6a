package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModuleRoot is the main module's directory, from `go env GOMOD`.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("harness: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("harness: run from inside the mini-kafka module (go env GOMOD is empty)")
	}
	return filepath.Dir(gomod), nil
}

// GoBuild builds pkg (a path relative to dir) into out with `go build`
// run in dir; log gets a line saying so.
func GoBuild(ctx context.Context, dir, pkg, out string, log io.Writer) error {
	fmt.Fprintf(log, "building %s in %s\n", pkg, dir)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (in %s): %w: %s", pkg, dir, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// BuildBroker builds cmd/broker into dir and returns the binary: from
// this module's working tree when ref is "", else as the module was at git
// ref, from a copy of that tree (git archive) under dir: the older build a
// rolling upgrade starts on. It is the one build of cmd/broker that
// benchmarks and tests exec.
func BuildBroker(ctx context.Context, dir, ref string, log io.Writer) (string, error) {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return "", err
	}
	if ref != "" {
		src := filepath.Join(dir, "src")
		if err := os.Mkdir(src, 0o755); err != nil {
			return "", fmt.Errorf("harness: %w", err)
		}
		archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, ref, src)
		if b, err := archive.CombinedOutput(); err != nil {
			return "", fmt.Errorf("harness: git archive %s: %w: %s", ref, err, strings.TrimSpace(string(b)))
		}
		root = src
	}
	bin := filepath.Join(dir, "broker")
	return bin, GoBuild(ctx, root, "./cmd/broker", bin, log)
}

// RunWithBroker is the TestMain of a test package that execs brokers:
// it builds cmd/broker into a temporary directory, sets *bin to it, runs
// run (the package's m.Run) and removes the build, returning run's exit
// code (2 when the build fails).
func RunWithBroker(bin *string, run func() int) int {
	dir, err := os.MkdirTemp("", "broker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	if *bin, err = BuildBroker(context.Background(), dir, "", os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return run()
}
