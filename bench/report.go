package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Report is a markdown document made of sections, each with paragraphs and
// tables, written in the order they were added.
type Report struct {
	Title    string
	Sections []*Section
}

// Section is a level-2 heading with its content.
type Section struct {
	Heading string
	blocks  []block
}

type block interface{ markdown(w io.Writer) }

// Section appends a new section and returns it.
func (r *Report) Section(heading string) *Section {
	s := &Section{Heading: heading}
	r.Sections = append(r.Sections, s)
	return s
}

// Failures adds the section listing the measurements that failed, when
// any did.
func (r *Report) Failures(failures []string) {
	if len(failures) > 0 {
		r.Section("Failed measurements").List(failures...)
	}
}

// Para adds a paragraph (a line of markdown; fmt verbs allowed).
func (s *Section) Para(format string, args ...any) {
	s.blocks = append(s.blocks, para(fmt.Sprintf(format, args...)))
}

// List adds a bullet list.
func (s *Section) List(items ...string) { s.blocks = append(s.blocks, list(items)) }

// Table adds a table with the given header and returns it for rows.
func (s *Section) Table(header ...string) *Table {
	t := &Table{Header: header}
	s.blocks = append(s.blocks, t)
	return t
}

// Table is a markdown table. The first column and those marked with Left
// are left-aligned, the rest (figures) right-aligned.
type Table struct {
	Header []string
	Rows   [][]string
	left   map[int]bool
}

// Left marks columns (by index) as text, aligned left.
func (t *Table) Left(cols ...int) *Table {
	if t.left == nil {
		t.left = map[int]bool{}
	}
	for _, c := range cols {
		t.left[c] = true
	}
	return t
}

// Row adds a row; missing cells are left blank.
func (t *Table) Row(cells ...string) { t.Rows = append(t.Rows, cells) }

type para string

func (p para) markdown(w io.Writer) { fmt.Fprintf(w, "%s\n\n", string(p)) }

type list []string

func (l list) markdown(w io.Writer) {
	for _, it := range l {
		fmt.Fprintf(w, "- %s\n", it)
	}
	fmt.Fprintln(w)
}

func (t *Table) markdown(w io.Writer) {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	row := func(cells []string) {
		fmt.Fprint(w, "|")
		for i := range t.Header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			fmt.Fprintf(w, " %s |", cell(c))
		}
		fmt.Fprintln(w)
	}
	row(t.Header)
	fmt.Fprint(w, "|")
	for i := range t.Header {
		if i == 0 || t.left[i] {
			fmt.Fprint(w, "---|")
		} else {
			fmt.Fprint(w, "--:|")
		}
	}
	fmt.Fprintln(w)
	for _, r := range t.Rows {
		row(r)
	}
	fmt.Fprintln(w)
}

// Markdown renders the report.
func (r *Report) Markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", r.Title)
	for _, s := range r.Sections {
		fmt.Fprintf(&b, "## %s\n\n", s.Heading)
		for _, bl := range s.blocks {
			bl.markdown(&b)
		}
	}
	return b.Bytes()
}

// WriteFile writes data to path, creating its directory, through a temporary
// file and a rename so that a reader never sees half a report.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("bench: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// WriteJSON writes v as indented JSON to path (see WriteFile).
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encode %s: %w", path, err)
	}
	return WriteFile(path, append(data, '\n'))
}

// SplitList splits a comma-separated flag value (" a:1, ,b:2 ") into its
// items, dropping empty ones.
func SplitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// Rate formats a per-second figure with a k or M suffix: 135k, 2.21M.
func Rate(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "–"
	// Three significant digits round 999.6k up to 1e+03k: such a value
	// reads in the next unit.
	case v >= 999.5e3:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 999.5:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

// MB formats a byte count in megabytes (10^6), as throughput figures are.
func MB(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.1f", v/1e6)
}

// Bytes formats a byte count with a binary unit: 96.0 MiB.
func Bytes(v int64) string {
	f := float64(v)
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if math.Abs(f) < 1024 || u == "GiB" {
			if u == "B" {
				return fmt.Sprintf("%d B", v)
			}
			return fmt.Sprintf("%.1f %s", f, u)
		}
		f /= 1024
	}
	return ""
}

// Times formats a dimensionless ratio: 0.97×.
func Times(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v)
}

// Millis formats a duration given in seconds as milliseconds with three
// significant digits: 8.41 ms, 0.105 ms; a second or more as seconds.
func Millis(seconds float64) string {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return "–"
	}
	if seconds >= 1 {
		return fmt.Sprintf("%.3g s", seconds)
	}
	return fmt.Sprintf("%.3g ms", seconds*1e3)
}
