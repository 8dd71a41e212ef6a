package logbench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/minikafka/minikafka/engines/segment"
)

// TestSegmentRetainedRecycles: written far past its roll size, the
// retained subject keeps its active segment (and the one it just sealed,
// until the next trim) and starts every new one on the spare, so the log
// only ever holds the two files its filler made.
func TestSegmentRetainedRecycles(t *testing.T) {
	const segmentBytes = 1 << 20
	dir := t.TempDir()
	w, err := SegmentRetainedSubject(segmentBytes).Writer(dir)
	require.NoError(t, err)
	var seen []os.FileInfo // every distinct segment file, by identity
	look := func() int {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		logs := 0
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".log") {
				continue
			}
			logs++
			fi, err := os.Stat(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			known := false
			for _, s := range seen {
				known = known || os.SameFile(s, fi)
			}
			if !known {
				seen = append(seen, fi)
			}
		}
		return logs
	}
	look()
	rec := make([]byte, 1024)
	for i := range 12 * segmentBytes / len(rec) {
		require.NoError(t, w.Write(rec))
		if i%64 == 0 {
			require.LessOrEqual(t, look(), 2, "retention drops sealed segments")
		}
	}
	require.NoError(t, w.Close())
	// Twelve segments written: without recycling each would be a new file.
	require.Len(t, seen, 2, "every segment started on the spare")
}
