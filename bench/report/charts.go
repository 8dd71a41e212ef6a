package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/matrix"
)

// Chart is one PNG of the report.
type Chart struct {
	File  string
	Title string
}

// Chart files, one per question.
const (
	ChartConcurrency   = "throughput-concurrency.png"
	ChartSize          = "throughput-size.png"
	ChartLatency       = "latency.png"
	ChartAmplification = "amplification.png"
	ChartReads         = "reads.png"
)

// errNoData: a chart with nothing to plot is left out, not drawn empty.
var errNoData = errors.New("no data")

// WriteCharts draws every chart that has data into dir and returns those
// written.
func WriteCharts(run *matrix.Run, dir string) ([]Chart, error) {
	charts := []struct {
		Chart
		draw func(*matrix.Run) (*plot.Plot, error)
	}{
		{Chart{ChartConcurrency, "Throughput against concurrency (1 KiB, acks=all, sync=always)"}, concurrencyChart},
		{Chart{ChartSize, "Throughput against record size (256 in flight, acks=all, sync=always)"}, sizeChart},
		{Chart{ChartLatency, "Produce latency percentiles at the reference point"}, latencyChart},
		{Chart{ChartAmplification, "Write and space amplification at the reference point"}, amplificationChart},
		{Chart{ChartReads, "Catch-up reads from the start (restarted server, page cache evicted)"}, readsChart},
	}
	var out []Chart
	for _, c := range charts {
		p, err := c.draw(run)
		if errors.Is(err, errNoData) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("chart %s: %w", c.File, err)
		}
		p.Title.Text = c.Title
		if err := p.Save(7*vg.Inch, 4.2*vg.Inch, filepath.Join(dir, c.File)); err != nil {
			return out, fmt.Errorf("chart %s: %w", c.File, err)
		}
		out = append(out, c.Chart)
	}
	return out, nil
}

// reference lines (not an engine under comparison) are dashed.
func dashed(run *matrix.Run, target string) bool {
	t, _ := run.Target(target)
	return t.Kind != matrix.KindEngine
}

// sweepChart draws one line per target: figure against the swept value of
// the points in slice, on log-log axes.
func sweepChart(run *matrix.Run, slice string, x func(matrix.Workload) float64, fig matrix.Figure, xLabel, yLabel string) (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var xs, ys []float64
	lines := 0
	for i, t := range run.Targets {
		var pts plotter.XYs
		for _, pt := range run.Points {
			if !pt.In(slice) {
				continue
			}
			if v := run.Cell(t.Name, pt.Workload).Median(fig); v > 0 && !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: x(pt.Workload), Y: v})
				xs = appendUnique(xs, x(pt.Workload))
				ys = append(ys, v)
			}
		}
		if len(pts) == 0 {
			continue
		}
		sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		l.Color, s.Color = bench.TargetColor(t.Name, i), bench.TargetColor(t.Name, i)
		l.Width = vg.Points(1.5)
		if dashed(run, t.Name) {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l, s)
		p.Legend.Add(t.Name, l, s)
		lines++
	}
	if lines == 0 {
		return nil, errNoData
	}
	p.X.Tick.Marker = fixedTicks(xs)
	p.Legend.Top, p.Legend.Left = true, true
	logRange(&p.X, xs, 1.5, 1.5)
	logRange(&p.Y, ys, 1.5, 4)
	p.Add(plotter.NewGrid())
	return p, nil
}

// logRange sets a log axis to span vs with margins (factors below the
// smallest and above the largest value; the top one leaves room for the
// legend). Setting it matters with a single value: left alone, the plot
// would widen the range by ±1 and reach 0, which a log axis cannot show.
func logRange(a *plot.Axis, vs []float64, below, above float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 0) {
		return
	}
	a.Min, a.Max = lo/below, hi*above
}

func appendUnique(xs []float64, x float64) []float64 {
	for _, v := range xs {
		if v == x {
			return xs
		}
	}
	return append(xs, x)
}

// fixedTicks labels exactly the swept values.
type fixedTicks []float64

func (f fixedTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for _, v := range f {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return ts
}

func concurrencyChart(run *matrix.Run) (*plot.Plot, error) {
	return sweepChart(run, matrix.SliceConcurrency, func(w matrix.Workload) float64 { return float64(w.InFlight) },
		matrix.RecordsPerSec, "records in flight", "records/s (median)")
}

func sizeChart(run *matrix.Run) (*plot.Plot, error) {
	return sweepChart(run, matrix.SliceSize, func(w matrix.Workload) float64 { return float64(w.RecordBytes) },
		matrix.MBPerSec, "record size, bytes", "MB/s (median)")
}

var percentileColors = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// latencyChart places p50, p99 and p99.9 of each target at the reference
// point as marks on a log axis: the spread between them is the story.
func latencyChart(run *matrix.Run) (*plot.Plot, error) {
	p := plot.New()
	p.Y.Label.Text = "latency, ms (log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	figs := []struct {
		name  string
		fig   matrix.Figure
		shape draw.GlyphDrawer
	}{
		{"p50", matrix.P50, draw.CircleGlyph{}},
		{"p99", matrix.P99, draw.TriangleGlyph{}},
		{"p99.9", matrix.P999, draw.SquareGlyph{}},
	}
	var names []string
	for _, t := range run.Targets {
		if run.Cell(t.Name, matrix.Reference).OKReps() > 0 {
			names = append(names, t.Name)
		}
	}
	if len(names) == 0 {
		return nil, errNoData
	}
	var ys []float64
	for j, f := range figs {
		var pts plotter.XYs
		for i, n := range names {
			if v := run.Cell(n, matrix.Reference).Median(f.fig); v > 0 {
				pts = append(pts, plotter.XY{X: float64(i) + 0.15*float64(j-1), Y: v * 1e3})
				ys = append(ys, v*1e3)
			}
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		s.Shape, s.Radius = f.shape, vg.Points(4)
		s.Color = percentileColors[j]
		p.Add(s)
		p.Legend.Add(f.name, s)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.Legend.Top, p.Legend.Left = true, true
	logRange(&p.Y, ys, 1.5, 4)
	p.Add(plotter.NewGrid())
	return p, nil
}

// groupedBars draws one group of bars per target, one bar per series.
func groupedBars(names []string, series []string, value func(target string, series int) float64, yLabel string) (*plot.Plot, error) {
	if len(names) == 0 || len(series) == 0 {
		return nil, errNoData
	}
	p := plot.New()
	p.Y.Label.Text = yLabel
	w := vg.Points(14)
	any := false
	for j, s := range series {
		vals := make(plotter.Values, len(names))
		for i, n := range names {
			v := value(n, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				v = 0
			}
			any = any || v > 0
			vals[i] = v
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = percentileColors[j%len(percentileColors)]
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(j)-float64(len(series)-1)/2)
		p.Add(b)
		p.Legend.Add(s, b)
	}
	if !any {
		return nil, errNoData
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.Legend.Top = true
	p.Y.Min = 0
	p.Y.Max *= 1.3
	p.Add(plotter.NewGrid())
	return p, nil
}

func amplificationChart(run *matrix.Run) (*plot.Plot, error) {
	var names []string
	for _, t := range run.Targets {
		if t.Durable && run.Cell(t.Name, matrix.Reference).OKReps() > 0 {
			names = append(names, t.Name)
		}
	}
	figs := []matrix.Figure{matrix.ProcWA, matrix.DeviceWA, matrix.SpaceAmp}
	return groupedBars(names, []string{"write amp. (server's writes)", "write amp. (device)", "space amp."},
		func(n string, j int) float64 { return run.Cell(n, matrix.Reference).Median(figs[j]) },
		"bytes per payload byte")
}

func readsChart(run *matrix.Run) (*plot.Plot, error) {
	var sizes []matrix.Workload
	for _, pt := range run.Points {
		if pt.Consume {
			sizes = append(sizes, pt.Workload)
		}
	}
	// By record size (the reading points differ in nothing else).
	slices.SortStableFunc(sizes, func(a, b matrix.Workload) int { return a.RecordBytes - b.RecordBytes })
	var names []string
	for _, t := range run.Targets {
		for _, w := range sizes {
			if !math.IsNaN(run.Cell(t.Name, w).Median(matrix.CatchUpMBPerSec)) {
				names = append(names, t.Name)
				break
			}
		}
	}
	var series []string
	for _, w := range sizes {
		series = append(series, matrix.SizeName(w.RecordBytes)+" records")
	}
	return groupedBars(names, series,
		func(n string, j int) float64 { return run.Cell(n, sizes[j]).Median(matrix.CatchUpMBPerSec) },
		"catch-up MB/s (median)")
}
