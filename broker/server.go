package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka/broker/partition"
)

// ErrServerClosed is returned by Serve and ListenAndServe after Close.
var ErrServerClosed = errors.New("broker: server closed")

// Server is one Kafka-protocol broker over the partitions of one data
// directory. Create it with New, serve with Serve or ListenAndServe, stop it
// with Close.
type Server struct {
	cfg     Config
	log     *slog.Logger
	parts   *partition.Manager
	metrics *metrics
	budget  *budget // request frames in memory
	// respBudget bounds fetch response bytes in memory (records read
	// and not yet written).
	respBudget *budget
	exts       []openExtension

	// refused counts connections refused since the last log line, logged
	// at refusedLogged (unix nanoseconds on the server's clock).
	refused       atomic.Int64
	refusedLogged atomic.Int64

	// fetchParked, when set (by tests), is called each time a fetch
	// starts waiting for data.
	fetchParked atomic.Pointer[func()]

	// connCtx ends every connection at once (the hard stop after the
	// shutdown grace period); quit is closed when Close begins, so long
	// waits (fetch long polls) return early.
	connCtx  context.Context
	hardStop context.CancelFunc
	quit     chan struct{}

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[*conn]struct{}
	closing   bool
	wg        sync.WaitGroup // accept loops and connections
	closeOnce sync.Once
	closeErr  error
}

// New opens the data directory (every topic, partition and producer state
// in it) and the registered extensions. It does not listen: call Serve or
// ListenAndServe.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		budget:     newBudget(cfg.MaxInflightBytes),
		respBudget: newBudget(cfg.MaxResponseBytes),
		conns:      map[*conn]struct{}{},
		quit:       make(chan struct{}),
	}
	s.connCtx, s.hardStop = context.WithCancel(context.Background())
	s.metrics = newMetrics(s)
	var err error
	s.parts, err = partition.OpenManager(partition.Config{
		Dir:               cfg.Dir,
		Engine:            cfg.Engine,
		EngineOptions:     s.observeEngine(cfg.EngineOptions),
		Clock:             cfg.Clock,
		Logger:            cfg.Logger,
		DefaultPartitions: cfg.DefaultPartitions,
		MaxPartitions:     cfg.MaxPartitions,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: open %s: %w", cfg.Dir, err)
	}
	if err := s.openExtensions(); err != nil {
		s.closeExtensions()
		if cerr := s.parts.Close(); cerr != nil {
			s.log.Error("closing partitions after a failed start", "err", cerr)
		}
		return nil, err
	}
	s.log.Info("broker opened", "dir", cfg.Dir, "engine", cfg.Engine,
		"sync", cfg.EngineOptions.Sync.String(), "topics", len(s.parts.Topics()))
	return s, nil
}

// ListenAndServe listens on Config.Addr and serves until Close.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("broker: listen: %w", err)
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln until Close, which closes ln. It always
// returns a non-nil error: ErrServerClosed after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners = append(s.listeners, ln)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	s.log.Info("serving", "addr", ln.Addr().String(), "advertised", s.advertised(ln))

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.shuttingDown() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("broker: accept: %w", err)
			}
			// Out of file descriptors and the like: back off and go on,
			// as net/http does, rather than stop serving for good.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Error("accept failed; retrying", "err", err, "in", backoff)
			s.pause(backoff)
			continue
		}
		backoff = 0
		s.accept(nc)
	}
}

// pause waits d on the server's clock, or until Close begins.
func (s *Server) pause(d time.Duration) {
	t := s.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-s.quit:
	}
}

// accept starts serving nc, or closes it at once when MaxConns are open.
func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.closing || len(s.conns) >= s.cfg.MaxConns {
		closing := s.closing
		s.mu.Unlock()
		if !closing {
			s.metrics.connsRejected.Inc()
			s.logRefusal(nc)
		}
		nc.Close()
		return
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.metrics.conns.Inc()

	go func() {
		defer s.wg.Done()
		defer s.metrics.conns.Dec()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
}

// logRefusal logs a connection refused for MaxConns, at most once a minute
// (a flood must not flood the log too), with how many were refused since.
func (s *Server) logRefusal(nc net.Conn) {
	n := s.refused.Add(1)
	now := s.cfg.Clock.Now().UnixNano()
	last := s.refusedLogged.Load()
	if last != 0 && now-last < int64(time.Minute) {
		return
	}
	if !s.refusedLogged.CompareAndSwap(last, now) {
		return
	}
	s.refused.Add(-n)
	s.log.Warn("refusing connections: too many open", "max", s.cfg.MaxConns, "refused", n, "last", nc.RemoteAddr().String())
}

// Addr is the address of the first listener Serve was given, or nil.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) == 0 {
		return nil
	}
	return s.listeners[0].Addr()
}

// Partitions is the partition manager (for extensions and tests).
func (s *Server) Partitions() *partition.Manager { return s.parts }

// Logger is the server's logger (for extensions).
func (s *Server) Logger() *slog.Logger { return s.log }

// Config is the server's configuration, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

func (s *Server) shuttingDown() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// Close shuts the server down gracefully: it stops accepting and reading,
// lets every request already read finish and get its response (for up to
// Config.ShutdownTimeout, then cancels them), closes the extensions and then
// the partitions, which syncs every engine. A second Close returns the
// first's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown() })
	return s.closeErr
}

func (s *Server) shutdown() error {
	s.mu.Lock()
	s.closing = true
	close(s.quit)
	for _, ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()

	drained := make(chan struct{})
	go func() { s.wg.Wait(); close(drained) }()
	timer := s.cfg.Clock.NewTimer(s.cfg.ShutdownTimeout)
	select {
	case <-drained:
		timer.Stop()
	case <-timer.C():
		s.log.Warn("shutdown: in-flight requests did not finish in time; cancelling them")
		s.hardStop()
		<-drained
	}
	s.hardStop()

	s.closeExtensions()
	if err := s.parts.Close(); err != nil {
		return fmt.Errorf("broker: close partitions: %w", err)
	}
	s.log.Info("broker closed")
	return nil
}

// AdvertisedHostPort is the host and port clients are told to connect to
// (Metadata, FindCoordinator).
func (s *Server) AdvertisedHostPort() (string, int32) { return s.advertisedHostPort() }

func (s *Server) advertisedHostPort() (string, int32) {
	if s.cfg.AdvertisedAddr != "" {
		host, port, _ := splitHostPort(s.cfg.AdvertisedAddr) // validated in New
		return host, port
	}
	s.mu.Lock()
	var addr net.Addr
	if len(s.listeners) > 0 {
		addr = s.listeners[0].Addr()
	}
	s.mu.Unlock()
	if addr == nil {
		return "localhost", 9092
	}
	host, port, err := splitHostPort(addr.String())
	if err != nil {
		return "localhost", 9092
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		// Listening on every interface: advertise the host name, as Kafka does.
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		} else {
			host = "localhost"
		}
	}
	return host, port
}

func (s *Server) advertised(ln net.Listener) string {
	host, port := s.AdvertisedHostPort()
	return net.JoinHostPort(host, fmt.Sprint(port))
}

// Extensions: server state beyond the partitions (consumer groups are one),
// plugged in by files of this package. registerExtension is called from an
// init function; New calls every open in registration order (file order)
// after the partitions are open, and keeps what it returns; handlers fetch it
// with extension. Close closes, in reverse order and after every connection
// has drained, each value that implements io.Closer.
type extensionDef struct {
	name string
	open func(s *Server) (any, error)
}

type openExtension struct {
	name  string
	value any
}

var extensionDefs []extensionDef

func registerExtension(name string, open func(s *Server) (any, error)) {
	for _, d := range extensionDefs {
		if d.name == name {
			panic("broker: extension registered twice: " + name)
		}
	}
	extensionDefs = append(extensionDefs, extensionDef{name, open})
}

func (s *Server) openExtensions() error {
	for _, d := range extensionDefs {
		v, err := d.open(s)
		if err != nil {
			return fmt.Errorf("broker: open %s: %w", d.name, err)
		}
		s.exts = append(s.exts, openExtension{d.name, v})
	}
	return nil
}

func (s *Server) closeExtensions() {
	for i := len(s.exts) - 1; i >= 0; i-- {
		if c, ok := s.exts[i].value.(io.Closer); ok {
			if err := c.Close(); err != nil {
				s.log.Error("closing extension", "name", s.exts[i].name, "err", err)
			}
		}
	}
	s.exts = nil
}

// extension returns the value the extension called name opened with; it
// panics if there is none, which is a registration bug.
func (s *Server) extension(name string) any {
	for _, e := range s.exts {
		if e.name == name {
			return e.value
		}
	}
	panic("broker: no extension " + name)
}
