package matrix

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The broker's metrics the matrix reads (see broker/syncmetrics.go): the
// sync rounds every durable engine reports (an fsync of segment's active
// segment or pebble's WAL, a synced badger commit), and the appends they
// covered, whose mean per round is the group-commit size.
const (
	metricFsyncs      = "minikafka_sync_rounds_total"
	metricWaitersSum  = "minikafka_group_commit_batch_size_sum"
	metricWaitersSeen = "minikafka_group_commit_batch_size_count"
)

// BrokerCounters are cumulative counters scraped from a broker's /metrics.
type BrokerCounters struct {
	// Fsyncs is the engine's sync rounds; -1 when the broker does not
	// export the metric.
	Fsyncs       int64
	WaitersSum   float64
	WaitersCount float64
}

// ScrapeBroker reads the counters from url (http://host:port/metrics).
func ScrapeBroker(ctx context.Context, url string) (BrokerCounters, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return BrokerCounters{}, fmt.Errorf("metrics: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return BrokerCounters{}, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return BrokerCounters{}, fmt.Errorf("metrics: %s: %s", url, resp.Status)
	}
	sums, err := parseMetrics(resp.Body, metricFsyncs, metricWaitersSum, metricWaitersSeen)
	if err != nil {
		return BrokerCounters{}, err
	}
	c := BrokerCounters{Fsyncs: -1, WaitersSum: sums[metricWaitersSum], WaitersCount: sums[metricWaitersSeen]}
	if v, ok := sums[metricFsyncs]; ok {
		c.Fsyncs = int64(v)
	}
	return c, nil
}

// parseMetrics sums, over all label sets, the samples of the named metrics
// in the Prometheus text format; names absent from the text are absent
// from the map.
func parseMetrics(r io.Reader, names ...string) (map[string]float64, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if !want[name] {
			continue
		}
		if j := strings.LastIndexByte(rest, '}'); j >= 0 {
			rest = rest[j+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("metrics: no value in %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: %q: %w", line, err)
		}
		out[name] += v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return out, nil
}
