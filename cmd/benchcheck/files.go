package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/logbench"
	"github.com/minikafka/minikafka/bench/result"
	"github.com/minikafka/minikafka/bench/workloads"
)

// fileReport reads the ratios, and the commit they were measured at, from
// a profile's one-file results (older formats included).
type fileReport func(data []byte) (ratios []bench.Ratio, commit string, err error)

// fileReports are the profiles of cmd/bench whose results are one file
// under the results directory, named PROFILE.json.
var fileReports = map[string]fileReport{
	// The engines profile's results, in the one schema or in logbench's
	// older format, read as one.
	"engines": func(b []byte) ([]bench.Ratio, string, error) {
		r, err := result.Parse(b)
		if err != nil {
			old, lerr := logbench.Parse(b)
			if lerr != nil {
				return nil, "", err
			}
			r = old.Result()
		}
		return r.Ratios(), r.Commit, nil
	},
}

// Every workload's results are one file, in the one schema.
func init() {
	for _, name := range workloads.Names() {
		fileReports[name] = func(b []byte) ([]bench.Ratio, string, error) {
			r, err := result.Parse(b)
			if err != nil {
				return nil, "", err
			}
			return r.Ratios(), r.Commit, nil
		}
	}
}

func fileReportNames() []string { return slices.Sorted(maps.Keys(fileReports)) }

// reportOf is the profile whose one-file report path is ("" for another
// file).
func reportOf(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	if path == "" || fileReports[name] == nil {
		return ""
	}
	return name
}

// checkFile compares a one-file report with its base: -base, or the same
// file as committed at HEAD.
func (o options) checkFile(ctx context.Context, stdout io.Writer) error {
	path, profile := o.newPath, o.profile
	if path == "" {
		path = filepath.Join(o.results, profile+".json")
	}
	if profile == "" {
		profile = reportOf(path)
	}
	read := fileReports[profile]
	if read == nil {
		return fmt.Errorf("%w: -profile %q: want one of %s", errUsage, profile, strings.Join(fileReportNames(), ", "))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: %v (run go run ./cmd/bench -profile %s first)", errUsage, err, profile)
	}
	next, nextCommit, err := read(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	baseName := o.basePath
	var baseData []byte
	if baseName != "" {
		baseData, err = os.ReadFile(baseName)
	} else {
		baseData, baseName, err = atHEAD(ctx, path)
	}
	if err != nil {
		return err
	}
	base, baseCommit, err := read(baseData)
	if err != nil {
		return fmt.Errorf("%s: %w", baseName, err)
	}
	fmt.Fprintf(stdout, "new:  %s (%s profile, commit %s)\nbase: %s (commit %s)\n\n", path, profile, nextCommit, baseName, baseCommit)
	return o.verdict(stdout, base, next)
}

// atHEAD is the file at path as committed at HEAD.
func atHEAD(ctx context.Context, path string) ([]byte, string, error) {
	top, rel, err := inRepo(ctx, path)
	if err != nil {
		return nil, "", err
	}
	data, err := git(ctx, top, "show", "HEAD:"+filepath.ToSlash(rel))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s is not committed at HEAD to compare with (-base to name a file): %v", errUsage, rel, err)
	}
	return []byte(data), filepath.ToSlash(rel) + " at HEAD", nil
}
