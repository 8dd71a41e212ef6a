package replbench

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// engineColors keep the colors of the other reports' charts.
var engineColors = map[string]color.RGBA{
	"segment": {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"pebble":  {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"badger":  {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

func colorOf(engine string) color.RGBA {
	if c, ok := engineColors[engine]; ok {
		return c
	}
	return color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
}

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
		l.Color, l.Width = colorOf(e), vg.Points(1.2)
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
