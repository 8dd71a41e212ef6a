package matrix

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The broker's metrics the matrix reads (see broker/syncmetrics.go): the
// sync rounds every durable engine reports (an fsync of segment's active
// segment or pebble's WAL, a synced badger commit), and the appends they
// covered, whose mean per round is the group-commit size.
const (
	metricFsyncs  = "minikafka_sync_rounds_total"
	metricWaiters = "minikafka_group_commit_batch_size"
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
	return parseCounters(resp.Body)
}

// parseCounters reads the counters from the Prometheus text format,
// summed over their label sets.
func parseCounters(r io.Reader) (BrokerCounters, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return BrokerCounters{}, fmt.Errorf("metrics: %w", err)
	}
	c := BrokerCounters{Fsyncs: -1}
	if f := fams[metricFsyncs]; f != nil {
		c.Fsyncs = 0
		for _, m := range f.GetMetric() {
			c.Fsyncs += int64(m.GetCounter().GetValue())
		}
	}
	for _, m := range fams[metricWaiters].GetMetric() {
		c.WaitersSum += m.GetHistogram().GetSampleSum()
		c.WaitersCount += float64(m.GetHistogram().GetSampleCount())
	}
	return c, nil
}
