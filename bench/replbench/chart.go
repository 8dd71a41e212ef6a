package replbench

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/minikafka/minikafka/bench"
)

// writeChart draws, per engine, the records of partition 0 acknowledged
// per second around the first kill of its leader, and reports whether
// there was anything to draw.
func (r *Result) writeChart(path string) (bool, error) {
	p := plot.New()
	p.Title.Text = "Partition 0 around the first kill -9 of its leader"
	p.X.Label.Text, p.Y.Label.Text = "ms from the kill", "records acknowledged per second"
	lines := 0
	perSecond := float64(1e9) / float64(TimelineBin)
	for _, e := range r.Config.Engines {
		c := r.Cell(e, KillLeader)
		if c == nil || len(c.Reps) == 0 || len(c.Reps[0].Timeline) == 0 {
			continue
		}
		var pts plotter.XYs
		for i, n := range c.Reps[0].Timeline {
			x := float64(i)*float64(TimelineBin.Milliseconds()) - float64(TimelineFrom.Milliseconds())
			pts = append(pts, plotter.XY{X: x, Y: float64(n) * perSecond})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return false, err
		}
		l.Color, l.Width = bench.TargetColor(e, 0), vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(e, l)
		lines++
	}
	if lines == 0 {
		return false, nil
	}
	p.Legend.Top = true
	if err := p.Save(7*vg.Inch, 4.2*vg.Inch, path); err != nil {
		return false, fmt.Errorf("chart %s: %w", path, err)
	}
	return true, nil
}
