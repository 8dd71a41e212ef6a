package logbench

import (
	"math"
	"time"

	"github.com/minikafka/minikafka/bench"
)

// Metric extracts one number from a sample; NaN when the sample lacks it.
type Metric func(Sample) float64

// The metrics the report and the targets use.
var (
	RecordsPerSecond Metric = func(s Sample) float64 { return div(float64(s.Records), s.Seconds) }
	BytesPerSecond   Metric = func(s Sample) float64 { return div(float64(s.PayloadBytes), s.Seconds) }
	Duration         Metric = func(s Sample) float64 { return s.Seconds }
	P50              Metric = func(s Sample) float64 { return latency(s, func(l bench.Summary) time.Duration { return l.P50 }) }
	P99              Metric = func(s Sample) float64 { return latency(s, func(l bench.Summary) time.Duration { return l.P99 }) }
	// WriteAmplification is device bytes written per payload byte.
	WriteAmplification Metric = func(s Sample) float64 {
		if s.Device == nil {
			return math.NaN()
		}
		return div(float64(s.Device.WrittenBytes), float64(s.PayloadBytes))
	}
	// SpaceAmplification is allocated bytes on disk per payload byte.
	SpaceAmplification Metric = func(s Sample) float64 {
		if s.Usage == nil {
			return math.NaN()
		}
		return div(float64(s.Usage.Allocated), float64(s.PayloadBytes))
	}
	DiskBytes Metric = func(s Sample) float64 {
		if s.Usage == nil {
			return math.NaN()
		}
		return float64(s.Usage.Allocated)
	}
	ApparentBytes Metric = func(s Sample) float64 {
		if s.Usage == nil {
			return math.NaN()
		}
		return float64(s.Usage.Apparent)
	}
	DeviceReadBytes Metric = func(s Sample) float64 {
		if s.Device == nil {
			return math.NaN()
		}
		return float64(s.Device.ReadBytes)
	}
)

func div(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func latency(s Sample, f func(bench.Summary) time.Duration) float64 {
	if s.Latency == nil {
		return math.NaN()
	}
	return f(*s.Latency).Seconds()
}

// Of returns the samples of one workload, the failed ones included.
func (sr *SubjectResult) Of(workload string) []Sample {
	var out []Sample
	for _, s := range sr.Samples {
		if s.Workload == workload {
			out = append(out, s)
		}
	}
	return out
}

// Spread summarises a metric of one workload over the repetitions that
// succeeded.
func (sr *SubjectResult) Spread(workload string, m Metric) bench.Spread {
	var xs []float64
	for _, s := range sr.Of(workload) {
		if s.Err == "" {
			xs = append(xs, m(s))
		}
	}
	return bench.SpreadOf(xs)
}

// Median is the median of a metric, NaN when missing (also for a nil
// subject, so that a ratio to an engine that did not run is NaN).
func (sr *SubjectResult) Median(workload string, m Metric) float64 {
	if sr == nil {
		return math.NaN()
	}
	return sr.Spread(workload, m).Median
}
