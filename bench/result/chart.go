package result

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/workloads"
)

// chartFile is where a chart of the workload goes, beside its report.
func chartFile(workload string, ch workloads.Chart) string {
	return workload + "-" + ch.File + ".png"
}

// writeChart draws ch into dir (see workloads.Chart).
func (r *Result) writeChart(dir string, ch workloads.Chart) error {
	draw := r.distribution
	if len(ch.Along) > 0 {
		draw = r.sweep
	}
	p := draw(ch)
	p.Title.Text = ch.Title
	p.Legend.Top, p.Legend.Left = true, true
	path := filepath.Join(dir, chartFile(r.Workload.Name, ch))
	if err := p.Save(7*vg.Inch, 4.2*vg.Inch, path); err != nil {
		return fmt.Errorf("chart %s: %w", path, err)
	}
	return nil
}

// distribution draws the share of a cell's repetitions within a value, a
// line per server and figure, and the bound of a target on the first.
func (r *Result) distribution(ch workloads.Chart) *plot.Plot {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = label(ch.Figures[0], "", ""), "share of repetitions"
	seconds := Unit(ch.Figures[0]) == "s"
	if seconds {
		p.X.Label.Text += " (ms)"
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	for i, srv := range r.Workload.Cell(ch.Cell).Servers {
		for j, fig := range ch.Figures {
			pts := cdf(bench.QuantilesOf(r.Cell(ch.Cell, srv).Values(fig)), seconds)
			if len(pts) == 0 {
				continue
			}
			l := line(pts, srv, i)
			if j > 0 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l)
			p.Legend.Add(srv+", "+label(fig, "", ""), l)
		}
	}
	for _, t := range r.Workload.Targets {
		if t.Cell != ch.Cell || t.Figure != ch.Figures[0] || t.Over != "" || t.OverCell != "" || t.Per != "" {
			continue
		}
		bound, _ := t.Bound()
		if seconds {
			bound *= 1000
		}
		l := line(plotter.XYs{{X: bound, Y: 0}, {X: bound, Y: 1}}, "", 0)
		l.Color, l.Dashes = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}, []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(l)
		p.Legend.Add("target: "+t.Name, l)
		break
	}
	p.Y.Min, p.Y.Max = 0, 1
	return p
}

// sweep draws a line per server through the median of the first figure
// in each of the chart's Along cells.
func (r *Result) sweep(ch workloads.Chart) *plot.Plot {
	p := plot.New()
	p.Y.Label.Text = label(ch.Figures[0], "", "") + " (median)"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.NominalX(ch.Ticks...)
	p.X.Min, p.X.Max = -0.5, float64(len(ch.Along))-0.5
	p.Y.Min, p.Y.Max = math.Inf(1), math.Inf(-1)
	for i, srv := range r.Workload.Servers {
		var pts plotter.XYs
		for x, cell := range ch.Along {
			if v := r.Cell(cell, srv).Stat(ch.Figures[0], ""); v > 0 {
				pts = append(pts, plotter.XY{X: float64(x), Y: v})
				p.Y.Min, p.Y.Max = min(p.Y.Min, v/1.5), max(p.Y.Max, v*4) // room for the legend
			}
		}
		if len(pts) > 0 {
			l := line(pts, srv, i)
			s, _ := plotter.NewScatter(pts) // the points of line, which is made
			s.Color = l.Color
			p.Add(l, s)
			p.Legend.Add(srv, l, s)
		}
	}
	p.Add(plotter.NewGrid())
	return p
}

// serverColors keep one colour per engine or peer across every chart.
var serverColors = map[string]color.RGBA{
	"segment": {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"pebble":  {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"badger":  {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"memory":  {R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	"kfake":   {R: 0x20, G: 0x20, B: 0x20, A: 0xff},
	"nats":    {R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// serverColor is srv's colour; i, its place among a chart's servers, picks
// one for a server that has none of its own.
func serverColor(srv string, i int) color.RGBA {
	if c, ok := serverColors[srv]; ok {
		return c
	}
	others := []color.RGBA{{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, {R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}}
	return others[i%len(others)]
}

// line is a server's line in its own colour (i, its place among the
// chart's servers, picks one for a server that has none).
func line(pts plotter.XYs, srv string, i int) *plotter.Line {
	l, err := plotter.NewLine(pts)
	if err != nil {
		panic(err) // the points are finite: the callers keep only values > 0
	}
	l.Color, l.Width = serverColor(srv, i), vg.Points(1.5)
	return l
}

// cdf is the empirical distribution as a step line (seconds shown as
// milliseconds); a log axis leaves out values that are not positive.
func cdf(q bench.Quantiles, seconds bool) plotter.XYs {
	n := q.N()
	var pts plotter.XYs
	for i := 1; i <= n; i++ {
		x := q.At(float64(i) / float64(n))
		if seconds {
			x *= 1000
		}
		if x > 0 {
			pts = append(pts, plotter.XY{X: x, Y: float64(i) / float64(n)})
		}
	}
	return pts
}
