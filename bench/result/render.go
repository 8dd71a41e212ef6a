package result

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/workloads"
)

// Markdown renders the report: the workload's description and targets,
// a table per cell, the failed repetitions, the facts.
func (r *Result) Markdown() []byte {
	w := &r.Workload
	rep := &bench.Report{Title: w.Title}
	s := rep.Section("Targets")
	if w.Description != "" {
		s.Para("%s", strings.TrimSpace(w.Description))
	}
	if r.Quick {
		s.Para("**A smoke run (-quick): one repetition of a fraction of the workload; not a measurement.**")
	}
	if busy := r.Busy(); busy != "" {
		s.Para("**%s**", busy)
	}
	if len(r.Checks) > 0 {
		s.CheckTable(r.Checks)
	}
	var failures []string
	for _, wc := range w.Cells {
		s := rep.Section(cmp.Or(wc.Title, wc.Name))
		if wc.Description != "" {
			s.Para("%s", strings.TrimSpace(wc.Description))
		}
		header := []string{"server"}
		for _, col := range wc.Columns {
			_, refName := r.ref(wc.Name, "", col.Over, col.OverCell)
			header = append(header, label(Per(col.Figure, col.Per), refName, col.Label)+statSuffix(col.Stat))
		}
		if !slices.ContainsFunc(r.Cells, func(c *Cell) bool { return c.Name == wc.Name }) {
			s.Para("Not run.")
			continue
		}
		t := s.Table(append(header, "reps ok")...)
		for _, srv := range wc.Servers {
			c := r.Cell(wc.Name, srv)
			if c == nil {
				continue
			}
			row := []string{srv}
			for _, col := range wc.Columns {
				col.Figure = Per(col.Figure, col.Per)
				if ref, name := r.ref(wc.Name, srv, col.Over, col.OverCell); name != "" {
					row = append(row, bench.Times(bench.Div(c.Stat(col.Figure, ""), ref.Stat(col.Figure, ""))))
					continue
				}
				if col.Stat != "" {
					row = append(row, Format(c.Stat(col.Figure, col.Stat), col.Figure))
					continue
				}
				row = append(row, bench.SpreadText(c.Spread(col.Figure), func(v float64) string { return Format(v, col.Figure) }))
			}
			t.Row(append(row, fmt.Sprintf("%d/%d", c.Finished(), len(c.Reps)))...)
			for _, e := range c.Errors() {
				failures = append(failures, fmt.Sprintf("%s on %s, %s", wc.Name, srv, e))
			}
		}
		for _, ch := range w.Charts {
			if ch.Cell == wc.Name && r.drawable(ch) {
				s.Para("![%s](%s)", ch.Title, chartFile(w.Name, ch))
			}
		}
	}
	rep.Failures(failures)
	setup := append(r.List(), fmt.Sprintf("workload %s: its cells, columns and targets as it ran are in the JSON beside this report; "+
		"figures are median [min–max] over the repetitions, interleaved across the servers", w.Name))
	rep.Section("Setup").List(setup...)
	return rep.Markdown()
}

// label is a column's header: the figure's name in words, its unit left
// to the cells ("produce.ack_p99_s" is "produce ack p99").
func label(figure, over, given string) string {
	if given != "" {
		return given
	}
	if over != "" {
		return "× " + over
	}
	if a, b, ok := strings.Cut(figure, "/"); ok {
		return label(a, "", "") + " / " + label(b, "", "")
	}
	l := strings.NewReplacer(".", " ", "_", " ").Replace(figure)
	for _, unit := range []string{" per s", " s", " bytes"} {
		if strings.HasSuffix(l, unit) {
			l = strings.TrimSuffix(l, unit)
			if unit == " per s" {
				l += "/s"
			}
			break
		}
	}
	return l
}

// Files are the report and results file names of a workload's run.
func Files(workload string) (report, results string) { return workload + ".md", workload + ".json" }

// drawable reports whether a chart has a value to draw.
func (r *Result) drawable(ch workloads.Chart) bool {
	cells := []string{ch.Cell}
	if len(ch.Along) > 0 {
		cells = ch.Along
	}
	for _, c := range r.Cells {
		if slices.Contains(cells, c.Name) && slices.ContainsFunc(c.Values(ch.Figures[0]), func(v float64) bool { return v > 0 }) {
			return true
		}
	}
	return false
}

// Write writes the report, its charts and its JSON into dir.
func (r *Result) Write(dir string) error {
	if err := r.WriteCharts(dir); err != nil {
		return err
	}
	md, js := Files(r.Workload.Name)
	if err := bench.WriteJSON(filepath.Join(dir, js), r); err != nil {
		return err
	}
	return bench.WriteFile(filepath.Join(dir, md), r.Markdown())
}

// WriteCharts draws every chart that has a value to draw into dir.
func (r *Result) WriteCharts(dir string) error {
	for _, ch := range r.Workload.Charts {
		if r.drawable(ch) {
			if err := r.writeChart(dir, ch); err != nil {
				return err
			}
		}
	}
	return nil
}

// Path is where Write puts the report in dir.
func (r *Result) Path(dir string) string {
	md, _ := Files(r.Workload.Name)
	return filepath.Join(dir, md)
}

func statSuffix(stat string) string {
	if stat == "" {
		return ""
	}
	return " " + stat
}
