package result

import (
	"fmt"
	"image/color"
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

// writeChart draws ch into dir (see workloads.Chart) and reports whether
// there was anything to draw.
func (r *Result) writeChart(dir string, ch workloads.Chart) (bool, error) {
	p := plot.New()
	p.Title.Text = ch.Title
	p.X.Label.Text, p.Y.Label.Text = label(ch.Figures[0], "", ""), "share of repetitions"
	seconds := Unit(ch.Figures[0]) == "s"
	if seconds {
		p.X.Label.Text += " (ms)"
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	lines := 0
	wc := r.Workload.Cell(ch.Cell)
	for i, srv := range wc.Servers {
		for j, fig := range ch.Figures {
			pts := cdf(bench.QuantilesOf(r.Cell(ch.Cell, srv).Values(fig)), seconds)
			if len(pts) == 0 {
				continue
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return false, err
			}
			l.Color, l.Width = bench.TargetColor(srv, i), vg.Points(1.5)
			if j > 0 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l)
			p.Legend.Add(srv+", "+label(fig, "", ""), l)
			lines++
		}
	}
	if lines == 0 {
		return false, nil
	}
	for _, t := range r.Workload.Targets {
		if t.Cell != ch.Cell || t.Figure != ch.Figures[0] || t.Over != "" || t.OverCell != "" || t.Per != "" {
			continue
		}
		bound, _ := t.Bound()
		if seconds {
			bound *= 1000
		}
		l, err := plotter.NewLine(plotter.XYs{{X: bound, Y: 0}, {X: bound, Y: 1}})
		if err != nil {
			return false, err
		}
		l.Color, l.Dashes = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}, []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(l)
		p.Legend.Add("target: "+t.Name, l)
		break
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min, p.Y.Max = 0, 1
	path := filepath.Join(dir, chartFile(r.Workload.Name, ch))
	if err := p.Save(7*vg.Inch, 4.2*vg.Inch, path); err != nil {
		return false, fmt.Errorf("chart %s: %w", path, err)
	}
	return true, nil
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
