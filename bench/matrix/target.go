package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minikafka/minikafka/bench/broker"
	"github.com/minikafka/minikafka/bench/load"
)

// Server is a running server under test: a child process, so that its
// CPU, memory and I/O are its own and can be read from /proc, and so that
// it can be killed.
type Server struct {
	*broker.Child
	// MetricsURL is the broker's /metrics, or "" for servers without it.
	MetricsURL string
	words      *lastWords
}

// Stop stops the server gracefully; a server that had died says how, with
// the end of its stderr.
func (s *Server) Stop() error {
	err := s.Child.Stop()
	if w := s.words.String(); err != nil && w != "" {
		err = fmt.Errorf("%w; its output ends with: %s", err, w)
	}
	return err
}

// LastWords is the end of what the server wrote on its stderr (and stdout
// after its address line): a failing server's own account.
func (s *Server) LastWords() string { return s.words.String() }

// lastWords keeps the last bytes a server wrote.
type lastWords struct {
	mu sync.Mutex
	b  []byte
}

const lastWordsBytes = 400

func (l *lastWords) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	if over := len(l.b) - lastWordsBytes; over > 0 {
		l.b = append(l.b[:0], l.b[over:]...)
	}
	return len(p), nil
}

func (l *lastWords) String() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return oneLine(string(l.b))
}

// Target is a server kind the matrix measures.
type Target struct {
	TargetInfo
	// CountsFsyncs: the server's /metrics counts its sync rounds (a broker
	// over a durable engine: each reports them through engine.Observer).
	CountsFsyncs bool
	// Start starts the server on dir under the sync policy ("always" or
	// "interval"). Starting again on the same dir is a restart.
	Start func(ctx context.Context, dir, sync string) (*Server, error)
	// Driver runs the client load against it.
	Driver Driver
}

// Driver runs load phases against a server. Every phase returns what it
// measured even when it also returns an error.
type Driver interface {
	// Prepare creates the topic (stream) the phases use.
	Prepare(ctx context.Context, s *Server, partitions int32) error
	// Produce runs a closed-loop producer for the spec.
	Produce(ctx context.Context, s *Server, spec Spec) (Produced, error)
	// Tail produces for the spec while a consumer reads at the log end.
	Tail(ctx context.Context, s *Server, spec Spec) (load.EndToEndResult, error)
	// CatchUp reads every record from the start of the log.
	CatchUp(ctx context.Context, s *Server, records int64) (load.ConsumeResult, error)
	// Records is the number of records in the log.
	Records(ctx context.Context, s *Server) (int64, error)
}

// Spec is one produce phase.
type Spec struct {
	Workload
	Duration time.Duration
	// MaxBytes caps the phase's payload (0: no cap).
	MaxBytes int64
	// Progress, when set, gets the acknowledged payload bytes as they grow.
	Progress func(bytes int64)
	// TrackAcked asks for Produced.Acked.
	TrackAcked bool
}

// Records is the record cap that MaxBytes implies (0: none).
func (s Spec) Records() int64 {
	if s.MaxBytes <= 0 || s.RecordBytes <= 0 {
		return 0
	}
	return max(1, s.MaxBytes/int64(s.RecordBytes))
}

// Produced is what a produce phase measured.
type Produced struct {
	load.ProduceResult
	// Batches acknowledged (see Rep.Batches).
	Batches int64
	// Acked is, per partition, the offset just past the highest
	// acknowledged record; nil when the driver does not track it.
	Acked map[int32]int64
}

// ChildStarter starts a server process for a target: path and args, the
// address the server listens on ("" when it prints it), the metrics URL.
type ChildStarter func(dir, sync string) (cfg broker.ChildConfig, metricsURL string, err error)

// StartChild turns a ChildStarter into a Target.Start.
func StartChild(starter ChildStarter) func(ctx context.Context, dir, sync string) (*Server, error) {
	return func(ctx context.Context, dir, sync string) (*Server, error) {
		cfg, metricsURL, err := starter(dir, sync)
		if err != nil {
			return nil, err
		}
		words := &lastWords{}
		if cfg.Log == nil {
			cfg.Log = io.Discard
		}
		cfg.Log = io.MultiWriter(cfg.Log, words)
		c, err := broker.StartChild(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return &Server{Child: c, MetricsURL: metricsURL, words: words}, nil
	}
}

// BrokerArgs is the command line of mini-kafka's broker for an engine.
func BrokerArgs(engine, dir, addr, metricsAddr, sync string, partitions int32) []string {
	return []string{"-engine", engine, "-dir", dir, "-addr", addr, "-advertised-addr", addr,
		"-metrics-addr", metricsAddr, "-sync", sync, "-partitions", fmt.Sprint(partitions),
		"-log-level", "warn"}
}

// BrokerStarter starts bin (cmd/broker) over engine.
func BrokerStarter(bin, engine string, partitions int32, logs io.Writer) ChildStarter {
	return func(dir, sync string) (broker.ChildConfig, string, error) {
		addr, err := broker.FreeAddr()
		if err != nil {
			return broker.ChildConfig{}, "", err
		}
		maddr, err := broker.FreeAddr()
		if err != nil {
			return broker.ChildConfig{}, "", err
		}
		return broker.ChildConfig{Path: bin, Args: BrokerArgs(engine, dir, addr, maddr, sync, partitions),
			Addr: addr, Log: logs, Ready: 2 * time.Minute}, "http://" + maddr + "/metrics", nil
	}
}

// errExited is the cause a phase's context ends with when its server died.
var errExited = errors.New("the server process exited")

// watch returns a context that ends, with errExited as its cause, soon
// after the server's process is gone: a dead server fails its phase at
// once instead of after the clients' timeouts.
func watch(ctx context.Context, s *Server) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				// Signal 0 checks the process exists. The child is reaped as
				// soon as it exits, so a dead one answers ESRCH.
				if err := unix.Kill(s.Pid(), 0); errors.Is(err, unix.ESRCH) {
					cancel(errExited)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// phaseErr words a phase's failure, naming a dead server as the cause.
func phaseErr(ctx context.Context, phase string, err error) error {
	if errors.Is(context.Cause(ctx), errExited) {
		return fmt.Errorf("%s: %w", phase, errExited)
	}
	return fmt.Errorf("%s: %w", phase, err)
}

// oneLine keeps an error message on one line for tables.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 700 {
		s = s[:700] + "…"
	}
	return s
}
