// Package progress draws the benchmark commands' progress bars
// (schollz/progressbar) on a terminal, as bench.Bar callbacks; it is
// apart from bench so that what imports bench (the peers module) does
// not build a terminal library.
package progress

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/minikafka/minikafka/bench"
)

// NewBar draws bars on w: of bytes when bytes is set, else of records
// with their rate; a total of 0 or less draws a spinner.
func NewBar(w io.Writer, bytes bool) bench.Bar {
	return func(what string, total int64) (func(int64), func()) {
		if total <= 0 {
			total = -1
		}
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(what),
			progressbar.OptionThrottle(200 * time.Millisecond),
			progressbar.OptionClearOnFinish(),
		}
		if bytes {
			opts = append(opts, progressbar.OptionShowBytes(true))
		} else {
			opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rec"))
		}
		b := progressbar.NewOptions64(total, opts...)
		return func(n int64) { _ = b.Set64(n) }, func() { _ = b.Finish() }
	}
}

// IsTerminal reports whether w is a terminal (progress bars draw there by
// default).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
