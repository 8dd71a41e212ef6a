package bench

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar makes a progress bar for a long phase: it returns a callback that
// sets how far the phase got, and one to call when it ends.
type Bar func(what string, total int64) (progress func(int64), finish func())

// NoBar draws nothing.
func NoBar(string, int64) (func(int64), func()) { return nil, func() {} }

// NewBar draws bars on w: of bytes when bytes is set, else of records
// with their rate; a total of 0 or less draws a spinner.
func NewBar(w io.Writer, bytes bool) Bar {
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
