package matrix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/harness"
)

// childArg makes the test binary a kfake server child: "kfake" serves
// until SIGTERM, "kfake-die:D" exits by itself after D, as a broker that
// crashes in the middle of a cell.
const childArg = "matrix-test-child="

func TestMain(m *testing.M) {
	for _, a := range os.Args[1:] {
		if mode, ok := strings.CutPrefix(a, childArg); ok {
			os.Exit(serveKfake(mode))
		}
	}
	os.Exit(m.Run())
}

func serveKfake(mode string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	dies := false
	if d, ok := strings.CutPrefix(mode, "kfake-die:"); ok {
		wait, err := time.ParseDuration(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
		dies = true
	}
	if err := harness.ServeKfake(ctx, nil, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if dies && !errors.Is(ctx.Err(), context.Canceled) {
		// A crash: no shutdown, the process is gone at once.
		fmt.Fprintln(os.Stderr, "test child: dying on purpose")
		os.Exit(3)
	}
	return 0
}

// childTarget is a target served by this test binary in mode.
func childTarget(t *testing.T, name, mode string) Target {
	self, err := os.Executable()
	require.NoError(t, err)
	return Target{
		TargetInfo: TargetInfo{Name: name, Kind: KindPeer, Note: "test child " + mode},
		Start: func(ctx context.Context, _, _ string) (*Server, error) {
			c, err := harness.StartChild(ctx, harness.ChildConfig{Path: self, Args: []string{childArg + mode}})
			if err != nil {
				return nil, err
			}
			return &Server{Child: c}, nil
		},
		Driver: Kafka{},
	}
}

// unknownEngine is a broker that refuses its engine, as cmd/broker does
// for a name it does not know.
func unknownEngine(t *testing.T) Target {
	addr, err := harness.FreeAddr()
	require.NoError(t, err)
	return Target{
		TargetInfo: TargetInfo{Name: "nosuch", Kind: KindEngine, Durable: true},
		Start: func(ctx context.Context, _, _ string) (*Server, error) {
			c, err := harness.StartChild(ctx, harness.ChildConfig{Path: "/bin/sh", Args: []string{"-c", `echo 'broker: engine: unknown engine "nosuch"' >&2; exit 1`},
				Addr: addr, Ready: 10 * time.Second})
			if err != nil {
				return nil, err
			}
			return &Server{Child: c}, nil
		},
		Driver: Kafka{},
	}
}

var tinyProfile = Profile{
	Name: "test", Reps: 2, WarmUp: 100 * time.Millisecond, Duration: 700 * time.Millisecond,
	MaxPhaseBytes: 64 << 20, Partitions: 2,
}

// TestMeasureKeepsFinishedCells runs a tiny matrix: a working server, one
// that cannot start (an unknown engine) and one that dies in the middle of
// its cell. The run goes on past the failures, keeps what finished, and
// says for each failed cell which phase failed and why. No figure is
// asserted beyond "it was measured".
func TestMeasureKeepsFinishedCells(t *testing.T) {
	w := Workload{RecordBytes: 200, InFlight: 16, Acks: "all", Sync: "always"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log strings.Builder
	run, err := Measure(ctx, Config{
		Name: "test", Profile: tinyProfile, Dir: t.TempDir(), Log: &log, Idle: 5 * time.Second, DeliveryTimeout: 5 * time.Second,
		Points: []Point{{Workload: w, Slices: []string{SliceConcurrency}, Consume: true}},
		Targets: []Target{
			childTarget(t, "good", "kfake"),
			unknownEngine(t),
			childTarget(t, "dies", "kfake-die:400ms"),
		},
		SkipRecovery: true,
	})
	require.NoError(t, err)
	require.Empty(t, run.Interrupted)
	require.Len(t, run.Cells, 3, log.String())

	good := run.Cell("good", w)
	require.Len(t, good.Reps, 2)
	assert.Equal(t, 2, good.OKReps(), log.String())
	for _, r := range good.Reps {
		assert.Empty(t, r.Error)
		assert.Positive(t, r.Produce.Records)
		assert.Positive(t, r.Batches)
		assert.GreaterOrEqual(t, r.CPUSeconds, 0.0)
		assert.Positive(t, r.PeakRSS)
		assert.Equal(t, int64(-1), r.Fsyncs, "a server without /metrics counts no fsyncs")
		require.NotNil(t, r.Tail)
		assert.Positive(t, r.Tail.Consume.Records)
		require.NotNil(t, r.CatchUp)
		assert.Positive(t, r.CatchUp.Records)
		assert.False(t, r.CatchUpCold, "a server that keeps nothing is read warm")
	}
	assert.True(t, good.Spread("records_per_s").OK())

	bad := run.Cell("nosuch", w)
	require.Len(t, bad.Reps, 2)
	for _, r := range bad.Reps {
		assert.Contains(t, r.Error, "start:")
		assert.Contains(t, r.Error, `unknown engine "nosuch"`, "the broker's own words say why")
	}
	assert.False(t, bad.Spread("records_per_s").OK())

	dies := run.Cell("dies", w)
	require.Len(t, dies.Reps, 2)
	for _, r := range dies.Reps {
		assert.Contains(t, r.Error, "exited", log.String())
		assert.Contains(t, r.Error, "dying on purpose", "the dead server's last words")
	}
	assert.Len(t, dies.Errors(), 2)
}

// TestMeasureInterrupted: a run whose context ends stops between cells
// and says so; what finished is kept.
func TestMeasureInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run, err := Measure(ctx, Config{Name: "test", Profile: tinyProfile, Dir: t.TempDir(),
		Points:  []Point{{Workload: Reference, Slices: []string{SliceConcurrency}}},
		Targets: []Target{childTarget(t, "good", "kfake")}})
	require.NoError(t, err)
	assert.NotEmpty(t, run.Interrupted)
	require.Len(t, run.Cells, 1)
	assert.Empty(t, run.Cells[0].Reps, "nothing ran")
}

func TestMeasureRefusesEmptyConfig(t *testing.T) {
	_, err := Measure(context.Background(), Config{Profile: tinyProfile, Dir: t.TempDir()})
	assert.Error(t, err)
	_, err = Measure(context.Background(), Config{Profile: Profile{Name: "zero"}, Dir: t.TempDir(),
		Targets: []Target{{TargetInfo: TargetInfo{Name: "x"}}}})
	assert.Error(t, err)
}

func TestCheckSpace(t *testing.T) {
	assert.NoError(t, checkSpace(t.TempDir()))
	assert.Error(t, checkSpace("/nonexistent/dir"))
}
