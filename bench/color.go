package bench

import "image/color"

// targetColors keep one color per engine or peer across every report's
// charts.
var targetColors = map[string]color.RGBA{
	"segment": {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"pebble":  {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"badger":  {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"memory":  {R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	"kfake":   {R: 0x20, G: 0x20, B: 0x20, A: 0xff},
	"nats":    {R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// otherColors are for targets without one of their own, by position.
var otherColors = []color.RGBA{{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, {R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}}

// TargetColor is the chart color of an engine or peer; i, its position
// among the lines of a chart, picks one for a target that has none.
func TargetColor(target string, i int) color.RGBA {
	if c, ok := targetColors[target]; ok {
		return c
	}
	return otherColors[i%len(otherColors)]
}
