// Command broker runs a mini-kafka broker: the Kafka protocol over the
// storage engine of your choice.
//
//	broker -dir ./data                       # segment engine on :9092
//	broker -engine pebble -dir ./data -addr :9093 -advertised-addr host:9093
//	broker -dir ./data -metrics-addr :9100   # Prometheus /metrics and /healthz
//
// A cluster of three on one machine: every broker is a controller voter.
//
//	broker -node-id 1 -dir d1 -addr :9092 -controller-addr :9192 -controllers 1@localhost:9192,2@localhost:9193,3@localhost:9194
//	broker -node-id 2 -dir d2 -addr :9093 -controller-addr :9193 -controllers ...same
//	broker -node-id 3 -dir d3 -addr :9094 -controller-addr :9194 -controllers ...same
//
// Every flag can also be set by an environment variable, MINIKAFKA_ and the
// flag's name in capitals with '_' for '-' (MINIKAFKA_NODE_ID=2); the
// command line wins. -node-id-from-ordinal takes the node id from the host
// name's last number, a StatefulSet pod's ordinal.
//
// /healthz (on -metrics-addr) answers 200 once the broker is registered and
// unfenced, 503 before and while it shuts down; "broker healthcheck" probes
// it and exits 0 or 1, for an image without a shell:
//
//	broker healthcheck -metrics-addr :9100
//
// SIGTERM or SIGINT shuts it down gracefully: it stops accepting, answers
// the requests already read, syncs every engine and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/txn"
	"github.com/minikafka/minikafka/engine"
	// The broker runs on whichever engine -engine names: this binary
	// carries them all.
	_ "github.com/minikafka/minikafka/engines/all"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == healthcheckCmd {
		if err := healthcheck(ctx, os.Args[2:], os.LookupEnv, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	cfg         broker.Config
	controllers string
	syncPolicy  string
	metricsAddr string
	pprof       bool
	logLevel    string
	logFormat   string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.cfg.Engine, "engine", broker.DefaultEngine, "storage engine: "+strings.Join(engine.Names(), "|"))
	fs.StringVar(&o.cfg.Dir, "dir", "data", "data directory")
	fs.StringVar(&o.cfg.Addr, "addr", broker.DefaultAddr, "listen address")
	fs.StringVar(&o.cfg.AdvertisedAddr, "advertised-addr", "", "host:port clients are told to connect to (default: the listen address, the host name if it listens on every interface)")
	partitions := fs.Int("partitions", broker.DefaultPartitions, "partition count of auto-created topics and of CreateTopics asking for the default")
	fs.BoolVar(&o.cfg.AutoCreate, "auto-create", true, "create unknown topics named by metadata requests that allow it (as Kafka's auto.create.topics.enable)")
	fs.StringVar(&o.syncPolicy, "sync", "always", "when appended data reaches the disk: always|interval|never")
	fs.DurationVar(&o.cfg.EngineOptions.SyncInterval, "sync-interval", engine.DefaultSyncInterval, "flush period under -sync=interval")
	fs.IntVar(&o.cfg.MaxConns, "max-conns", broker.DefaultMaxConns, "maximum open client connections; more are closed at once")
	maxFrame := fs.Int("max-frame-bytes", broker.DefaultMaxFrameBytes, "maximum request size; a larger one closes the connection")
	fs.Int64Var(&o.cfg.MaxInflightBytes, "max-inflight-bytes", broker.DefaultMaxInflightBytes, "request bytes held in memory across all connections")
	fs.Int64Var(&o.cfg.MaxResponseBytes, "max-response-bytes", broker.DefaultMaxResponseBytes, "fetched record bytes held in memory across all connections")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus /metrics and /healthz on this address (empty: off)")
	fs.BoolVar(&o.pprof, "pprof", false, "also serve Go's /debug/pprof/ profiles on -metrics-addr")
	nodeID := fs.Int("node-id", broker.DefaultNodeID, "this broker's id in the cluster")
	fromOrdinal := fs.Bool("node-id-from-ordinal", false, "take the node id from the number at the end of the host name (a StatefulSet pod's ordinal: minikafka-2 is node 2)")
	fs.StringVar(&o.controllers, "controllers", "", "the controller quorum's voters, id@host:port,... (every broker is one; empty: a one-node cluster that is its own controller)")
	fs.StringVar(&o.cfg.ControllerAddr, "controller-addr", "", "where this node's controller listens (raft and the controller APIs; required with -controllers)")
	fs.StringVar(&o.cfg.ClusterID, "cluster-id", broker.DefaultClusterID, "the cluster's id: nodes of different clusters refuse each other")
	fs.StringVar(&o.cfg.Rack, "rack", "", "this broker's rack, for rack-aware replica placement")
	c := &o.cfg.Cluster
	fs.IntVar(&c.MinInsyncReplicas, "min-insync-replicas", 1, "min.insync.replicas of topics that do not set it")
	rf := fs.Int("default-replication-factor", 1, "replication factor of auto-created topics and of CreateTopics asking for the default")
	fs.BoolVar(&c.UncleanLeaderElection, "unclean-leader-election", false, "let a replica outside the ISR lead when no in-sync one can (loses acknowledged records)")
	fs.DurationVar(&c.SessionTimeout, "broker-session-timeout", 3*time.Second, "fence a broker that has not heartbeat the controller for this long")
	txnVersion := fs.Int("transaction-version", 2, "the transaction.version feature advertised to clients: 2, KIP-890's epoch bump at every transaction end; 1, the explicit AddPartitionsToTxn protocol")
	fs.DurationVar(&c.TxnMaxTimeout, "transaction-max-timeout", txn.DefaultMaxTimeout, "longest transaction timeout a producer may ask for (transaction.max.timeout.ms)")
	autoRebalance := fs.Bool("auto-leader-rebalance", true, "move leaderships back to preferred replicas every few seconds (auto.leader.rebalance.enable; off: only on ElectLeaders)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug|info|warn|error")
	fs.StringVar(&o.logFormat, "log-format", "text", "text|json")
	g := &o.cfg.Groups
	fs.DurationVar(&g.InitialRebalanceDelay, "group-initial-rebalance-delay", group.DefaultInitialRebalanceDelay, "how long a group formed from empty waits for more members (group.initial.rebalance.delay.ms; 0: none)")
	fs.DurationVar(&g.MinSessionTimeout, "group-min-session-timeout", group.DefaultMinSessionTimeout, "shortest session timeout a member may ask for (group.min.session.timeout.ms)")
	fs.DurationVar(&g.MaxSessionTimeout, "group-max-session-timeout", group.DefaultMaxSessionTimeout, "longest session timeout a member may ask for (group.max.session.timeout.ms)")
	fs.IntVar(&g.MaxMembers, "group-max-size", group.DefaultMaxMembers, "members per group (group.max.size)")
	fs.DurationVar(&g.OffsetsRetention, "offsets-retention", group.DefaultOffsetsRetention, "an empty group's committed offsets expire this long after it emptied (offsets.retention.minutes; 0: never)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := applyEnv(fs, os.LookupEnv); err != nil {
		return o, err
	}
	if *fromOrdinal {
		host, err := os.Hostname()
		if err != nil {
			return o, fmt.Errorf("-node-id-from-ordinal: %w", err)
		}
		if *nodeID, err = ordinal(host); err != nil {
			return o, fmt.Errorf("-node-id-from-ordinal: %w", err)
		}
	}
	if *partitions < 1 || *partitions > 1<<20 {
		return o, fmt.Errorf("-partitions %d: want 1 to %d", *partitions, 1<<20)
	}
	if *maxFrame < 1024 || *maxFrame > 1<<30 {
		return o, fmt.Errorf("-max-frame-bytes %d: want 1024 to %d", *maxFrame, 1<<30)
	}
	o.cfg.DefaultPartitions, o.cfg.MaxFrameBytes = int32(*partitions), int32(*maxFrame)
	if *nodeID < 0 || *nodeID > 1<<30 {
		return o, fmt.Errorf("-node-id %d: want 0 to %d", *nodeID, 1<<30)
	}
	if *rf < 1 || *rf > 1<<15-1 {
		return o, fmt.Errorf("-default-replication-factor %d: want at least 1", *rf)
	}
	if c.MinInsyncReplicas < 1 {
		return o, fmt.Errorf("-min-insync-replicas %d: want at least 1", c.MinInsyncReplicas)
	}
	o.cfg.NodeID, c.DefaultReplicationFactor = int32(*nodeID), int16(*rf)
	if !*autoRebalance {
		c.LeaderRebalanceInterval = -1
	}
	switch *txnVersion {
	case 1:
		c.TransactionVersion = -1
	case 2:
		c.TransactionVersion = 2
	default:
		return o, fmt.Errorf("-transaction-version %d: want 1 or 2", *txnVersion)
	}
	voters, err := broker.ParseVoters(o.controllers)
	if err != nil {
		return o, fmt.Errorf("-controllers: %w", err)
	}
	o.cfg.Controllers = voters
	if err := checkGroupFlags(g); err != nil {
		return o, err
	}
	policy, err := engine.ParseSyncPolicy(o.syncPolicy)
	if err != nil {
		return o, err
	}
	o.cfg.EngineOptions.Sync = policy
	return o, nil
}

// checkGroupFlags refuses nonsense and maps the flags' "0: none" and
// "0: never" onto GroupConfig's negative values (its zero is the default).
func checkGroupFlags(g *broker.GroupConfig) error {
	switch {
	case g.InitialRebalanceDelay < 0 || g.OffsetsRetention < 0:
		return errors.New("-group-initial-rebalance-delay and -offsets-retention: want 0 or more")
	case g.MinSessionTimeout <= 0 || g.MaxSessionTimeout < g.MinSessionTimeout:
		return fmt.Errorf("-group-min-session-timeout %v, -group-max-session-timeout %v: want 0 < min <= max",
			g.MinSessionTimeout, g.MaxSessionTimeout)
	case g.MaxMembers < 1:
		return fmt.Errorf("-group-max-size %d: want at least 1", g.MaxMembers)
	}
	if g.InitialRebalanceDelay == 0 {
		g.InitialRebalanceDelay = -1
	}
	if g.OffsetsRetention == 0 {
		g.OffsetsRetention = -1
	}
	return nil
}

func newLogger(o options, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", o.logFormat)
}

// run serves until ctx ends, then shuts down gracefully. ready, if not nil,
// gets the broker's and the metrics listener's addresses once both listen.
func run(ctx context.Context, args []string, logOut io.Writer, ready func(kafka, metrics net.Addr)) error {
	o, err := parseFlags(args, logOut)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log, err := newLogger(o, logOut)
	if err != nil {
		return err
	}
	o.cfg.Logger = log
	ln, err := net.Listen("tcp", o.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var ctlLn net.Listener
	if o.cfg.ControllerAddr != "" {
		if ctlLn, err = net.Listen("tcp", o.cfg.ControllerAddr); err != nil {
			ln.Close()
			return fmt.Errorf("controller listen: %w", err)
		}
	}
	s, err := broker.New(o.cfg)
	if err != nil {
		ln.Close()
		if ctlLn != nil {
			ctlLn.Close()
		}
		return err
	}
	var health atomic.Value // of string: "starting", "ok", "shutting down"
	health.Store("starting")
	go func() {
		if s.WaitReady(ctx) == nil {
			health.CompareAndSwap("starting", "ok")
		}
	}()
	metricsAddr, stopMetrics, err := serveMetrics(o, s, &health, log)
	if err != nil {
		ln.Close()
		return errors.Join(err, s.Close())
	}
	served := make(chan error, 2)
	go func() { served <- s.Serve(ln) }()
	if ctlLn != nil {
		go func() {
			if err := s.ServeController(ctlLn); !errors.Is(err, broker.ErrServerClosed) {
				served <- err
			}
		}()
	}
	if ready != nil {
		ready(ln.Addr(), metricsAddr)
	}

	var fatal error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "cause", context.Cause(ctx))
	case err := <-served:
		log.Error("serving stopped", "err", err)
	case fatal = <-s.Failed():
		log.Error("this broker cannot go on serving", "err", fatal)
	}
	health.Store("shutting down")
	closeErr := s.Close()
	stopMetrics()
	if err := <-served; !errors.Is(err, broker.ErrServerClosed) {
		return errors.Join(err, closeErr)
	}
	return errors.Join(fatal, closeErr)
}

// serveMetrics serves /metrics, /healthz (200 while health is "ok", 503
// with health's word otherwise) and optionally /debug/pprof/ on
// -metrics-addr ("" serves nothing). It returns the listener's address and
// a function that stops it.
func serveMetrics(o options, s *broker.Server, health *atomic.Value, log *slog.Logger) (net.Addr, func(), error) {
	if o.metricsAddr == "" {
		return nil, func() {}, nil
	}
	ln, err := net.Listen("tcp", o.metricsAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.MetricsHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		h := health.Load().(string)
		if h != "ok" {
			http.Error(w, h, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, h)
	})
	if o.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String())
	return ln.Addr(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}
