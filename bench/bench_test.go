package bench_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench"
)

func TestLatencyQuantiles(t *testing.T) {
	l := bench.NewLatency()
	for i := 1; i <= 1000; i++ {
		l.Record(time.Duration(i) * time.Millisecond)
	}
	s := l.Summary()
	assert.Equal(t, int64(1000), s.Count)
	// HdrHistogram at 3 significant digits: within 0.1%.
	assert.InDelta(t, float64(500*time.Millisecond), float64(s.P50), float64(time.Millisecond))
	assert.InDelta(t, float64(990*time.Millisecond), float64(s.P99), float64(time.Millisecond))
	assert.InDelta(t, float64(time.Second), float64(s.Max), float64(time.Millisecond))
}

func TestLatencyClampsAndMerges(t *testing.T) {
	a, b := bench.NewLatency(), bench.NewLatency()
	a.Record(0)              // below the lowest trackable value
	a.Record(24 * time.Hour) // above the highest
	b.Record(time.Millisecond)
	a.Merge(b)
	assert.Equal(t, int64(3), a.Count(), "clamped values are kept, and merge adds b's")
	assert.Equal(t, int64(1), b.Count(), "merge leaves its source alone")
	assert.GreaterOrEqual(t, a.Max(), 9*time.Minute)
	assert.Equal(t, time.Duration(0), bench.NewLatency().Quantile(99), "empty histogram")
}

func TestSpreadOf(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name          string
		in            []float64
		med, min, max float64
		n             int
	}{
		{"odd", []float64{3, 1, 2}, 2, 1, 3, 3},
		{"even", []float64{4, 1, 2, 3}, 2.5, 1, 4, 4},
		{"one", []float64{7}, 7, 7, 7, 1},
		{"failed repetitions ignored", []float64{nan, 5, nan, 1}, 3, 1, 5, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := bench.SpreadOf(c.in)
			assert.Equal(t, bench.Spread{Median: c.med, Min: c.min, Max: c.max, N: c.n}, s)
			assert.True(t, s.OK())
		})
	}
	t.Run("nothing", func(t *testing.T) {
		s := bench.SpreadOf([]float64{nan})
		assert.False(t, s.OK())
		assert.True(t, math.IsNaN(s.Median))
	})
}

func TestParseDiskStat(t *testing.T) {
	cases := []struct {
		name    string
		line    string
		want    bench.DiskStats
		wantErr bool
	}{
		{
			name: "kernel 5.5+ with discard and flush fields",
			line: "   22931     4962  1095618    18019     3805    30726  2146400     5470        0     3648    23825     5715       68   125448      335        5        0\n",
			want: bench.DiskStats{ReadOps: 22931, ReadBytes: 1095618 * 512, WriteOps: 3805, WrittenBytes: 2146400 * 512, FlushOps: 5},
		},
		{
			name: "old kernel, 11 fields",
			line: "10 0 80 1 20 0 160 2 0 3 3",
			want: bench.DiskStats{ReadOps: 10, ReadBytes: 80 * 512, WriteOps: 20, WrittenBytes: 160 * 512},
		},
		{name: "too short", line: "1 2 3", wantErr: true},
		{name: "not a number", line: "1 2 x 4 5 6 7 8 9 10 11", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := bench.ParseDiskStat(c.line)
			if c.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestDiskStatsSub(t *testing.T) {
	a := bench.DiskStats{ReadOps: 5, ReadBytes: 50, WriteOps: 7, WrittenBytes: 70, FlushOps: 1}
	b := bench.DiskStats{ReadOps: 8, ReadBytes: 90, WriteOps: 9, WrittenBytes: 170, FlushOps: 4}
	assert.Equal(t, bench.DiskStats{ReadOps: 3, ReadBytes: 40, WriteOps: 2, WrittenBytes: 100, FlushOps: 3}, b.Sub(a))
}

// onDevice returns the disk holding a fresh temporary directory, or skips
// when there is none (tmpfs, overlay, not Linux).
func onDevice(t *testing.T) (string, *bench.Disk) {
	dir := t.TempDir()
	d, err := bench.DiskFor(dir)
	if errors.Is(err, bench.ErrNoDevice) {
		t.Skipf("no block device under %s: %v", dir, err)
	}
	require.NoError(t, err)
	if m := bench.Machine(dir); m.Filesystem == "tmpfs" {
		t.Skip("temporary directory is on tmpfs")
	}
	return dir, d
}

func TestDiskCountsSyncedWrites(t *testing.T) {
	dir, d := onDevice(t)
	before, err := d.Stats()
	require.NoError(t, err)
	const size = 1 << 20
	writeSynced(t, filepath.Join(dir, "f"), size)
	after, err := d.Stats()
	require.NoError(t, err)
	// Other processes can only add to the counters.
	assert.GreaterOrEqual(t, after.Sub(before).WrittenBytes, int64(size),
		"a synced 1 MiB file must reach device %s", d.Name)
}

func writeSynced(t *testing.T, path string, size int) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, size))
	require.NoError(t, err)
	require.NoError(t, bench.Datasync(f))
	require.NoError(t, f.Close())
}

func TestEvictCacheMakesFilesCold(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("page-cache control is Linux-only")
	}
	dir, _ := onDevice(t)
	path := filepath.Join(dir, "sub", "f")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	writeSynced(t, path, 4<<20)
	_, err := os.ReadFile(path)
	require.NoError(t, err)
	warm, err := bench.Resident(dir)
	require.NoError(t, err)
	require.Greater(t, warm, 0.5, "a file just written and read is cached")

	method, resident, err := bench.EvictCache(dir)
	require.NoError(t, err)
	assert.Contains(t, method, "fadvise")
	assert.Less(t, resident, 0.01)
	again, err := bench.Resident(dir)
	require.NoError(t, err)
	assert.Equal(t, resident, again)
}

func TestDirUsage(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "x"), make([]byte, 10000), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "y"), make([]byte, 5), 0o644))
	u, err := bench.DirUsage(dir)
	require.NoError(t, err)
	assert.Equal(t, 2, u.Files)
	assert.Equal(t, int64(10005), u.Apparent)
	assert.Positive(t, u.Allocated)
	_, err = bench.DirUsage(filepath.Join(dir, "missing"))
	assert.Error(t, err)
}

func TestPayload(t *testing.T) {
	a, b := bench.NewPayload(7, 1<<16), bench.NewPayload(7, 1<<16)
	assert.Equal(t, a.Record(3, 100), b.Record(3, 100), "same seed, same bytes")
	assert.NotEqual(t, a.Record(3, 100), a.Record(4, 100), "neighbouring records differ")
	assert.NotEqual(t, a.Record(3, 100), bench.NewPayload(8, 1<<16).Record(3, 100), "seed matters")
	assert.Len(t, a.Record(1<<40, 1000), 1000)
	big := make([]byte, 3<<16)
	a.Fill(0, big)
	assert.NotEqual(t, make([]byte, 100), big[len(big)-100:], "fill reaches the end")
}

func TestReportMarkdown(t *testing.T) {
	r := &bench.Report{Title: "T"}
	s := r.Section("S")
	s.Para("a %d", 1)
	tb := s.Table("name", "value", "note").Left(2)
	tb.Row("x", "1", "a|b")
	tb.Row("y")
	s.List("one", "two")
	want := "# T\n\n## S\n\na 1\n\n" +
		"| name | value | note |\n|---|--:|---|\n| x | 1 | a\\|b |\n| y |  |  |\n\n" +
		"- one\n- two\n\n"
	assert.Equal(t, want, string(r.Markdown()))
}

func TestFormatting(t *testing.T) {
	cases := []struct{ got, want string }{
		{bench.Rate(135_200), "135k"},
		{bench.Rate(2_210_000), "2.21M"},
		{bench.Rate(12.5), "12.5"},
		{bench.Rate(999_700), "1M"},
		{bench.Rate(999.7), "1k"},
		{bench.Rate(math.NaN()), "–"},
		{bench.MB(1_500_000), "1.5"},
		{bench.Bytes(512), "512 B"},
		{bench.Bytes(3 << 20), "3.0 MiB"},
		{bench.Times(0.971), "0.97×"},
		{bench.Millis(0.00841), "8.41 ms"},
		{bench.Millis(1.034), "1.03 s"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) { assert.Equal(t, c.want, c.got) })
	}
}

func TestSplitList(t *testing.T) {
	assert.Equal(t, []string{"a:1", "b:2"}, bench.SplitList(" a:1, ,b:2 "))
	assert.Empty(t, bench.SplitList(""))
}

func TestWriteJSONAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "r.json")
	require.NoError(t, bench.WriteJSON(path, map[string]int{"a": 1}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1}`, string(b))
	assert.Error(t, bench.WriteJSON(path, math.NaN()), "NaN is not JSON")
	_, err = os.Stat(path + ".tmp")
	assert.True(t, os.IsNotExist(err) || err == nil)
}

func TestMachine(t *testing.T) {
	m := bench.Machine(t.TempDir())
	assert.Positive(t, m.CPUs)
	assert.NotEmpty(t, m.GoVersion)
	if runtime.GOOS == "linux" {
		assert.NotEmpty(t, m.Kernel)
		assert.Positive(t, m.MemoryBytes)
		assert.NotEmpty(t, m.Filesystem)
		assert.True(t, strings.HasPrefix(m.Dir, m.MountPoint), "%s under %s", m.Dir, m.MountPoint)
		assert.Positive(t, m.Memory.FirstTouchNs)
		assert.Positive(t, m.Memory.MmapWriteMBps)
		assert.Positive(t, m.Memory.PwriteMBps)
		entries, err := os.ReadDir(m.Dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "the memory measurement leaves no file behind")
	}
}
