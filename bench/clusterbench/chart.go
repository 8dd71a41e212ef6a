package clusterbench

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/minikafka/minikafka/bench"
)

// writeChart draws, per engine, the share of topics served within a time
// (acks=all solid, acks=1 dashed) on a log time axis, and reports whether
// there was anything to draw.
func (r *Result) writeChart(path string) (bool, error) {
	p := plot.New()
	p.Title.Text = "Topic creation until served: share of topics within a time"
	p.X.Label.Text, p.Y.Label.Text = "ms from CreateTopics", "share of topics"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	lines := 0
	for _, e := range r.Config.Engines {
		c := r.Cell(e, TopicCreation)
		for _, s := range []struct {
			name   string
			fig    func(Rep) float64
			dashed bool
		}{{"acks=all", Seconds, false}, {"acks=1", LeaderAck, true}} {
			pts := cdf(c.Quantiles(s.fig))
			if len(pts) == 0 {
				continue
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return false, err
			}
			l.Color, l.Width = bench.TargetColor(e, 0), vg.Points(1.5)
			if s.dashed {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s, %s", e, s.name), l)
			lines++
		}
	}
	if lines == 0 {
		return false, nil
	}
	goal := TargetTopicCreation.Seconds() * 1000
	t, err := plotter.NewLine(plotter.XYs{{X: goal, Y: 0}, {X: goal, Y: 1}})
	if err != nil {
		return false, err
	}
	t.Color, t.Dashes = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}, []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(t)
	p.Legend.Add(fmt.Sprintf("target p99 %s", bench.Millis(TargetTopicCreation.Seconds())), t)
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min, p.Y.Max = 0, 1
	if err := p.Save(7*vg.Inch, 4.2*vg.Inch, path); err != nil {
		return false, fmt.Errorf("chart %s: %w", path, err)
	}
	return true, nil
}

// cdf is the empirical distribution as a step line, in milliseconds.
func cdf(q bench.Quantiles) plotter.XYs {
	n := q.N()
	var pts plotter.XYs
	for i := 1; i <= n; i++ {
		x := q.At(float64(i)/float64(n)) * 1000
		if x <= 0 {
			continue
		}
		pts = append(pts, plotter.XY{X: x, Y: float64(i) / float64(n)})
	}
	return pts
}
