package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/cluster/quorum"
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

	// The cluster (cluster.go): the metadata image, the quorum replicating it,
	// this node's controller, the client that reaches the active one, this
	// broker's standing (lifecycle.go) and the group coordinators it runs.
	store          *cluster.Store
	quorum         *quorum.Server
	raftTransport  *quorum.TCPTransport // nil for a quorum of one
	ctl            *controller
	stopController context.CancelFunc
	ctlClient      *controllerClient
	life           *lifecycle
	groups         *groupSet
	txns           *txnSet
	peers          *peerClients
	fetchers       *fetchers
	throttles      *throttles
	kick           chan struct{} // wakes the reconciler; capacity 1
	reconciled     notifier      // the image offset the reconciler last applied
	reconcileBegan atomic.Int64  // when (UnixNano, injected clock) it began its current round
	startOnce      sync.Once     // starts the lifecycle at the first Serve
	stopLife       context.CancelFunc
	failed         chan error // a fatal error after New (capacity 1)
	bg             sync.WaitGroup

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

	mu           sync.Mutex
	listeners    []net.Listener // clients'
	ctlListeners []net.Listener // the controller's
	conns        map[*conn]struct{}
	closing      bool
	wg           sync.WaitGroup // accept loops and connections
	closeOnce    sync.Once
	closeErr     error
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
		kick:       make(chan struct{}, 1),
		failed:     make(chan error, 1),
	}
	s.ctlClient = newControllerClient(s)
	s.groups = newGroupSet(s)
	s.txns = newTxnSet(s)
	s.peers = &peerClients{s: s}
	s.throttles = newThrottles()
	s.fetchers = newFetchers(s)
	s.connCtx, s.hardStop = context.WithCancel(context.Background())
	s.metrics = newMetrics(s)
	var err error
	s.parts, err = partition.OpenManager(partition.Config{
		Dir:           cfg.Dir,
		Engine:        cfg.Engine,
		EngineOptions: s.observeEngine(cfg.EngineOptions),
		Clock:         cfg.Clock,
		Logger:        s.log,
		Replication:   partition.Replication{ProposeISR: s.proposeISR, LagTime: cfg.Cluster.ReplicaLagTime},
		// The data directory failed (a full disk, an I/O error): stop, as
		// Kafka halts on its last log directory, so that the controller
		// gives this broker's leaderships and ISR places to others.
		OnLogFailure: func(err error) { s.fail(fmt.Errorf("broker: the data directory failed: %w", err)) },
	})
	if err != nil {
		return nil, fmt.Errorf("broker: open %s: %w", cfg.Dir, err)
	}
	if err := s.openCluster(); err != nil {
		s.closeCluster()
		if cerr := s.parts.Close(); cerr != nil {
			s.log.Error("closing partitions after a failed start", "err", cerr)
		}
		return nil, err
	}
	s.bg.Add(1)
	go s.reconcileLoop()
	s.log.Info("broker opened", "dir", cfg.Dir, "engine", cfg.Engine, "node", cfg.NodeID, "cluster", cfg.ClusterID,
		"voters", len(cfg.voters()), "sync", cfg.EngineOptions.Sync.String(), "partitions", len(s.parts.Keys()))
	return s, nil
}

// start begins registering with the controller: at the first Serve, once
// the advertised address is known.
func (s *Server) start() {
	s.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopLife = cancel
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.life.run(ctx)
		}()
	})
}

// WaitReady returns once this broker is registered with the controller
// and unfenced (serving what it leads), or ctx.Err().
func (s *Server) WaitReady(ctx context.Context) error {
	select {
	case <-s.life.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ready reports whether this broker has been registered and unfenced.
func (s *Server) ready() bool {
	select {
	case <-s.life.ready:
		return true
	default:
		return false
	}
}

// awaitReady returns once this broker is registered and unfenced, after
// the broker session timeout at the latest, or when ctx or the server
// ends. Until then the image it replayed at start may name the last
// incarnation's endpoint and leaderships: a client sent to a dead address
// waits out its metadata refresh interval (franz-go's is 5 s). Kafka's
// brokers likewise take client requests only once caught up with their
// own registration. A broker that does not get there in time (no quorum)
// answers from what it has.
func (s *Server) awaitReady(ctx context.Context) {
	t := s.cfg.Clock.NewTimer(s.cfg.Cluster.SessionTimeout)
	defer t.Stop()
	select {
	case <-s.life.ready:
	case <-t.C():
	case <-ctx.Done():
	case <-s.quit:
	}
}

// Failed returns a channel that gets the error that stops this broker from
// ever serving (another live process has its node id; the controller is of
// another cluster; its data directory failed). The program should exit.
func (s *Server) Failed() <-chan error { return s.failed }

func (s *Server) fail(err error) {
	select {
	case s.failed <- err:
	default:
	}
}

// ListenAndServe listens on Config.Addr and serves until Close.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("broker: listen: %w", err)
	}
	return s.Serve(ln)
}

// Serve accepts client connections on ln until Close, which closes ln. It
// always returns a non-nil error: ErrServerClosed after Close. The first
// Serve also starts the broker's registration with the controller.
func (s *Server) Serve(ln net.Listener) error {
	return s.serve(ln, clientListener)
}

func (s *Server) serve(ln net.Listener, l listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	if l == clientListener {
		s.listeners = append(s.listeners, ln)
	} else {
		s.ctlListeners = append(s.ctlListeners, ln)
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	if l == clientListener {
		s.log.Info("serving", "addr", ln.Addr().String(), "advertised", s.advertised(ln))
		s.start()
	} else {
		s.log.Info("serving the controller listener", "addr", ln.Addr().String())
	}

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
		s.accept(nc, l)
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
// On the controller listener a raft connection goes to the quorum instead.
func (s *Server) accept(nc net.Conn, l listener) {
	if l == controllerListener {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if kc, ok := s.routeController(nc); ok {
				s.acceptKafka(kc, l)
			}
		}()
		return
	}
	s.acceptKafka(nc, l)
}

func (s *Server) acceptKafka(nc net.Conn, l listener) {
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
	c := newConn(s, nc, l)
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
		c.lostHeartbeats()
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
	// Through startOnce: what a Serve's start did happens before (stopLife
	// is read below), and a Serve after this Close starts nothing.
	s.startOnce.Do(func() {})
	// A controlled shutdown first: the controller moves this broker's
	// leaderships while it still serves, so clients find the new leaders
	// without waiting for a session timeout.
	if s.stopLife != nil {
		ctx, cancel := withTimeout(context.Background(), s.cfg.Clock, s.cfg.ShutdownTimeout)
		s.life.controlledShutdown(ctx)
		cancel()
	}
	s.mu.Lock()
	s.closing = true
	close(s.quit)
	for _, ln := range s.listeners {
		ln.Close()
	}
	for _, ln := range s.ctlListeners {
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

	if s.stopLife != nil {
		s.stopLife()
	}
	s.txns.close()
	s.groups.close()
	s.peers.close()
	s.fetchers.close()
	s.closeCluster()
	s.bg.Wait()
	s.ctlClient.close()
	if err := s.parts.Close(); err != nil {
		return fmt.Errorf("broker: close partitions: %w", err)
	}
	if epoch := s.life.epoch.Load(); epoch != 0 {
		if err := markCleanShutdown(s.fs(), s.cfg.Dir, epoch); err != nil {
			s.log.Warn("the next start will count this one as unclean", "err", err)
		}
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

// Metadata is this broker's latest image of the cluster metadata. Never
// modify it.
func (s *Server) Metadata() *cluster.Metadata { return s.store.Image() }
