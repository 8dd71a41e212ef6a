package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// EnvPrefix starts the environment variable of every flag: -node-id is
// MINIKAFKA_NODE_ID, -min-insync-replicas MINIKAFKA_MIN_INSYNC_REPLICAS. A
// flag on the command line wins over its variable.
const EnvPrefix = "MINIKAFKA_"

// envName is the environment variable of flag name.
func envName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag of fs not given on the command line from its
// environment variable, if lookup finds one; a bad value is an error that
// names the variable.
func applyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		if v, ok := lookup(envName(f.Name)); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, serr)
			}
		}
	})
	return err
}

// ordinal is the number after the last '-' of host, a StatefulSet pod's
// name (minikafka-2 is 2).
func ordinal(host string) (int, error) {
	i := strings.LastIndexByte(host, '-')
	n, err := strconv.Atoi(host[i+1:])
	if i < 0 || err != nil || n < 0 {
		return 0, fmt.Errorf("host name %q does not end in -<ordinal>", host)
	}
	return n, nil
}

// healthcheckCmd is the first argument that makes the binary probe a
// running broker's /healthz instead of serving: an image built FROM
// scratch has no shell or curl for its HEALTHCHECK.
const healthcheckCmd = "healthcheck"

// healthcheck GETs the /healthz of the broker whose -metrics-addr the
// flags or the environment name (an address without a host, or on every
// interface, is probed on loopback) and returns nil on 200 OK.
func healthcheck(ctx context.Context, args []string, lookup func(string) (string, bool), out io.Writer) error {
	fs := flag.NewFlagSet(healthcheckCmd, flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("metrics-addr", "", "the broker's -metrics-addr")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for an answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(fs, lookup); err != nil {
		return err
	}
	if *addr == "" {
		return errors.New("healthcheck: no -metrics-addr (or " + envName("metrics-addr") + ")")
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("healthcheck: -metrics-addr %q: %w", *addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	url := "http://" + net.JoinHostPort(host, port) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	fmt.Fprintf(out, "%s: %s %s", url, resp.Status, body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s", resp.Status)
	}
	return nil
}
