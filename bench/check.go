package bench

import (
	"fmt"
	"math"
)

// Verdicts of a Check.
const (
	Pass    = "PASS"
	Fail    = "FAIL"
	Missing = "MISSING" // no figure: the cells it needs failed or did not run
	// Unresolved: there is a figure, but the run's own noise is larger
	// than the margin the target asks about.
	Unresolved = "UNRESOLVED"
)

// Check is one target of a profile judged on a run: a figure against a
// bound.
type Check struct {
	Name string `json:"name"`
	// Value is the figure (a median), in Unit; 0 when Missing.
	Value float64 `json:"value"`
	// Unit is how Value reads: "×" a ratio, "s" seconds, "B" bytes, "%" a
	// relative change in percent, "" a count.
	Unit    string  `json:"unit"`
	Bound   float64 `json:"bound"`
	AtLeast bool    `json:"at_least"`
	Verdict string  `json:"verdict"`
	// Note is the figure in words (what was compared), or why it is
	// missing or unresolved.
	Note string `json:"note,omitempty"`
}

// Judge checks value against the bound: at least the bound, or at most.
// A NaN or infinite value is Missing.
func Judge(name string, value float64, unit string, atLeast bool, bound float64) Check {
	c := Check{Name: name, Value: value, Unit: unit, Bound: bound, AtLeast: atLeast}
	switch {
	case math.IsNaN(value) || math.IsInf(value, 0):
		c.Value, c.Verdict, c.Note = 0, Missing, "no figure"
	case atLeast && value >= bound, !atLeast && value <= bound:
		c.Verdict = Pass
	default:
		c.Verdict = Fail
	}
	return c
}

// Because sets the note; a Missing check keeps it as the reason.
func (c Check) Because(format string, args ...any) Check {
	c.Note = fmt.Sprintf(format, args...)
	return c
}

// Goal is the bound as a reader wants it: "≥ 0.95×", "≤ 10 ms".
func (c Check) Goal() string {
	op := "≤"
	if c.AtLeast {
		op = "≥"
	}
	return op + " " + FormatUnit(c.Bound, c.Unit)
}

// Measured is the value in its unit, "–" when missing.
func (c Check) Measured() string {
	if c.Verdict == Missing {
		return "–"
	}
	return FormatUnit(c.Value, c.Unit)
}

func (c Check) String() string {
	s := fmt.Sprintf("%s %s: %s (target %s)", c.Verdict, c.Name, c.Measured(), c.Goal())
	if c.Note != "" {
		s += ": " + c.Note
	}
	return s
}

// CheckTable adds checks to s as a table: each target, its figure (with
// the note, if any), its goal and its verdict.
func (s *Section) CheckTable(checks []Check) {
	t := s.Table("target", "measured", "goal", "result").Left(1, 2, 3)
	for _, c := range checks {
		m := c.Measured()
		if c.Note != "" {
			m += " (" + c.Note + ")"
		}
		t.Row(c.Name, m, c.Goal(), "**"+c.Verdict+"**")
	}
}

// FormatUnit writes v in unit u (see Check.Unit).
func FormatUnit(v float64, u string) string {
	switch u {
	case "×":
		return fmt.Sprintf("%.2f×", v)
	case "s":
		return Millis(v)
	case "B":
		return Bytes(int64(v))
	case "%":
		return fmt.Sprintf("%+.1f %%", v)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
