package logbench

import (
	"math"
	"time"

	"github.com/minikafka/minikafka/bench"
)

// Metric extracts one number from a sample; NaN when the sample lacks it
// or failed.
type Metric func(Sample) float64

// metric makes f a Metric that a failed sample does not have.
func metric(f func(Sample) float64) Metric {
	return func(s Sample) float64 {
		if s.Err != "" {
			return math.NaN()
		}
		return f(s)
	}
}

// Failure implements bench.Rep.
func (s Sample) Failure() string { return s.Err }

// The metrics the report and the targets use.
var (
	RecordsPerSecond = metric(func(s Sample) float64 { return div(float64(s.Records), s.Seconds) })
	BytesPerSecond   = metric(func(s Sample) float64 { return div(float64(s.PayloadBytes), s.Seconds) })
	Duration         = metric(func(s Sample) float64 { return s.Seconds })
	P50              = metric(func(s Sample) float64 { return latency(s, func(l bench.Summary) time.Duration { return l.P50 }) })
	P99              = metric(func(s Sample) float64 { return latency(s, func(l bench.Summary) time.Duration { return l.P99 }) })
	// WriteAmplification is device bytes written per payload byte.
	WriteAmplification = metric(func(s Sample) float64 {
		if s.Device == nil {
			return math.NaN()
		}
		return div(float64(s.Device.WrittenBytes), float64(s.PayloadBytes))
	})
	// SpaceAmplification is allocated bytes on disk per payload byte.
	SpaceAmplification = metric(func(s Sample) float64 {
		if s.Usage == nil {
			return math.NaN()
		}
		return div(float64(s.Usage.Allocated), float64(s.PayloadBytes))
	})
	DiskBytes = metric(func(s Sample) float64 {
		if s.Usage == nil {
			return math.NaN()
		}
		return float64(s.Usage.Allocated)
	})
	ApparentBytes = metric(func(s Sample) float64 {
		if s.Usage == nil {
			return math.NaN()
		}
		return float64(s.Usage.Apparent)
	})
	DeviceWrittenBytes = metric(func(s Sample) float64 {
		if s.Device == nil {
			return math.NaN()
		}
		return float64(s.Device.WrittenBytes)
	})
	FreedBytes      = metric(func(s Sample) float64 { return float64(s.Freed) })
	DeviceReadBytes = metric(func(s Sample) float64 {
		if s.Device == nil {
			return math.NaN()
		}
		return float64(s.Device.ReadBytes)
	})
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
