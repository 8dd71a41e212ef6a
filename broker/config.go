package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
)

// Defaults for the zero fields of Config.
const (
	DefaultEngine            = "segment"
	DefaultAddr              = ":9092"
	DefaultPartitions        = 1
	DefaultMaxConns          = 10000
	DefaultMaxFrameBytes     = 100 << 20 // Kafka's socket.request.max.bytes
	DefaultMaxInflightBytes  = 64 << 20
	DefaultMaxResponseBytes  = 128 << 20
	DefaultMaxInflightPerCon = 8
	DefaultIdleTimeout       = 10 * time.Minute // Kafka's connections.max.idle.ms
	DefaultFrameTimeout      = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultShutdownTimeout   = 5 * time.Second
	DefaultFetchMaxBytes     = 55 << 20 // Kafka's fetch.max.bytes
	DefaultClusterID         = "minikafka"
	DefaultNodeID            = 1
	// DefaultHeartbeatInterval is how often a broker heartbeats the
	// controller (Kafka's broker.heartbeat.interval.ms is 2 s; a shorter one
	// lets the session timeout be short too).
	DefaultHeartbeatInterval = 250 * time.Millisecond
	// DefaultOffsetsTopicPartitions is __consumer_offsets' partition count
	// (Kafka's offsets.topic.num.partitions is 50; each partition here is an
	// engine with its files, so fewer).
	DefaultOffsetsTopicPartitions = 8
	// DefaultOffsetsTopicReplicationFactor is offsets.topic.replication.factor,
	// lowered to the brokers there are when __consumer_offsets is created.
	DefaultOffsetsTopicReplicationFactor = 3
	// DefaultReplicaLagTime is replica.lag.time.max.ms (Kafka's is 30 s;
	// 10 s, its old default, frees acks=all producers from a stuck
	// follower sooner).
	DefaultReplicaLagTime = 10 * time.Second
)

// Voter is one member of the controller quorum.
type Voter struct {
	ID int32
	// Addr is host:port of its controller listener.
	Addr string
}

// Config configures a Server. The zero value of every field but Dir means
// its default.
type Config struct {
	// Dir holds all data: topics, partitions, producer state.
	Dir string
	// Engine is the registered engine every partition uses.
	Engine string
	// EngineOptions are passed to every partition's engine (sync policy, ...).
	// Clock and Logger default to the Server's.
	EngineOptions engine.Options

	// Addr is where ListenAndServe listens.
	Addr string
	// AdvertisedAddr is the host:port clients are told to connect to in
	// Metadata; empty means the listener's own address.
	AdvertisedAddr string

	// DefaultPartitions is the partition count of auto-created topics and of
	// CreateTopics requests that ask for the default (-1).
	DefaultPartitions int32
	// AutoCreate creates unknown topics named by Metadata requests that
	// allow it (Kafka's auto.create.topics.enable).
	AutoCreate bool
	// MaxPartitions bounds one topic's partition count (0: the partition
	// layer's default).
	MaxPartitions int32

	// MaxConns bounds open client connections; one more is closed at once.
	MaxConns int
	// MaxFrameBytes bounds one request; a longer one closes the connection
	// before anything is allocated for it.
	MaxFrameBytes int32
	// MaxInflightBytes bounds the request bytes held in memory across all
	// connections (a reader waits for room before reading a body).
	MaxInflightBytes int64
	// MaxResponseBytes bounds the fetched record bytes held in memory
	// across all connections (a fetch waits for room before it reads).
	MaxResponseBytes int64
	// MaxInflightPerConn bounds pipelined requests per connection.
	MaxInflightPerConn int
	// IdleTimeout closes a connection that sends nothing for that long.
	IdleTimeout time.Duration
	// FrameTimeout closes a connection whose request has started but not
	// fully arrived within that long (slowloris).
	FrameTimeout time.Duration
	// WriteTimeout closes a connection that does not take a response within
	// that long.
	WriteTimeout time.Duration
	// ShutdownTimeout bounds how long Close waits for in-flight requests.
	ShutdownTimeout time.Duration
	// FetchMaxBytes caps a fetch response whatever the client asks.
	FetchMaxBytes int32
	// NodeID is this broker's id in the cluster.
	NodeID int32
	// ClusterID names the cluster; brokers and controllers of different
	// clusters refuse each other. It is kept in the data directory, which
	// refuses to start under another one.
	ClusterID string
	// Rack is this broker's rack, for rack-aware placement.
	Rack string
	// Controllers are the controller quorum's voters. Empty means this node
	// alone: a one-node cluster that is its own controller (it needs no
	// controller listener then). A node that is not one of them is a broker
	// only: it follows the metadata log from the voters (metadata.go).
	Controllers []Voter
	// ControllerAddr is where this node's controller listens (raft and the
	// controller APIs); ServeController serves it. Required with several
	// voters.
	ControllerAddr string
	// Cluster tunes the controller and the brokers' lifecycle.
	Cluster ClusterConfig

	// Groups tunes the consumer group coordinator.
	Groups GroupConfig

	// Clock is what every timeout reads. Nil means clock.Real.
	Clock clock.Clock
	// Logger receives structured logs. Nil discards them.
	Logger *slog.Logger
	// Registerer receives the Prometheus metrics; nil means a registry of the
	// Server's own, served by (*Server).MetricsHandler.
	Registerer prometheus.Registerer
}

// ClusterConfig tunes the controller's decisions and the brokers' sessions.
// Zero fields take the defaults: Kafka's where it has one.
type ClusterConfig struct {
	// MinInsyncReplicas is min.insync.replicas for topics that do not set it.
	MinInsyncReplicas int
	// UncleanLeaderElection is unclean.leader.election.enable for topics
	// that do not set it.
	UncleanLeaderElection bool
	// DefaultReplicationFactor is default.replication.factor: auto-created
	// topics, and CreateTopics asking for -1.
	DefaultReplicationFactor int16
	// SessionTimeout fences a broker that has not heartbeat for that long;
	// HeartbeatInterval is how often brokers heartbeat.
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	// OffsetsTopicPartitions and OffsetsTopicReplicationFactor shape
	// __consumer_offsets when it is created.
	OffsetsTopicPartitions        int32
	OffsetsTopicReplicationFactor int16
	// TxnTopicPartitions and TxnTopicReplicationFactor shape
	// __transaction_state when it is created (Kafka's
	// transaction.state.log.num.partitions and .replication.factor).
	TxnTopicPartitions        int32
	TxnTopicReplicationFactor int16
	// TxnMaxTimeout is transaction.max.timeout.ms: the longest transaction
	// timeout a producer may ask for (zero: txn.DefaultMaxTimeout).
	TxnMaxTimeout time.Duration
	// TransactionVersion is the transaction.version feature level the
	// broker advertises (zero: 2, KIP-890's second part; -1: none, as a
	// broker of the first part, so clients add partitions themselves).
	TransactionVersion int16
	// TickInterval is the controller quorum's raft tick.
	TickInterval time.Duration
	// ReplicaLagTime is replica.lag.time.max.ms: a follower that has not
	// caught up with its leader for that long leaves the ISR.
	ReplicaLagTime time.Duration
	// LeaderRebalanceInterval is how often the active controller moves
	// leaderships back to preferred replicas (Kafka's
	// leader.imbalance.check.interval.seconds; zero:
	// cluster.DefaultRebalanceInterval). Negative turns that off, as
	// auto.leader.rebalance.enable=false does: leaderships then move back
	// only on ElectLeaders.
	LeaderRebalanceInterval time.Duration
}

// GroupConfig tunes the consumer group coordinator. Zero fields take the
// group package's defaults (group.Default*): Kafka's session timeout bounds
// of 6 s and 30 min, an initial rebalance delay of 250 ms, compaction of
// __consumer_offsets past 16 MiB.
type GroupConfig struct {
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (Kafka's group.min/max.session.timeout.ms);
	// JoinGroup answers INVALID_SESSION_TIMEOUT outside them. A member that
	// vanishes without LeaveGroup keeps its partitions for its session
	// timeout: tests lower the minimum to make that short.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long a
	// group formed from empty waits for more members; negative means none.
	InitialRebalanceDelay time.Duration
	// MaxMembers is group.max.size: a join beyond it gets GROUP_MAX_SIZE_REACHED.
	MaxMembers int
	// OffsetsRetention is offsets.retention.minutes: an Empty group's
	// offsets expire this long after it emptied; negative means never.
	OffsetsRetention time.Duration
	// OffsetsCompactMinBytes is the size below which __consumer_offsets is
	// never compacted; negative turns compaction off.
	OffsetsCompactMinBytes int64
}

func (c Config) withDefaults() Config {
	if c.Engine == "" {
		c.Engine = DefaultEngine
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = DefaultPartitions
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.MaxInflightBytes <= 0 {
		c.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.MaxInflightPerConn <= 0 {
		c.MaxInflightPerConn = DefaultMaxInflightPerCon
	}
	c.IdleTimeout = orDefault(c.IdleTimeout, DefaultIdleTimeout)
	c.FrameTimeout = orDefault(c.FrameTimeout, DefaultFrameTimeout)
	c.WriteTimeout = orDefault(c.WriteTimeout, DefaultWriteTimeout)
	c.ShutdownTimeout = orDefault(c.ShutdownTimeout, DefaultShutdownTimeout)
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if c.ClusterID == "" {
		c.ClusterID = DefaultClusterID
	}
	if c.NodeID == 0 {
		c.NodeID = DefaultNodeID
	}
	c.Cluster.SessionTimeout = orDefault(c.Cluster.SessionTimeout, cluster.DefaultSessionTimeout)
	c.Cluster.HeartbeatInterval = orDefault(c.Cluster.HeartbeatInterval, DefaultHeartbeatInterval)
	c.Cluster.ReplicaLagTime = orDefault(c.Cluster.ReplicaLagTime, DefaultReplicaLagTime)
	if c.Cluster.OffsetsTopicPartitions <= 0 {
		c.Cluster.OffsetsTopicPartitions = DefaultOffsetsTopicPartitions
	}
	if c.Cluster.OffsetsTopicReplicationFactor <= 0 {
		c.Cluster.OffsetsTopicReplicationFactor = DefaultOffsetsTopicReplicationFactor
	}
	switch {
	case c.Cluster.TransactionVersion == 0:
		c.Cluster.TransactionVersion = 2
	case c.Cluster.TransactionVersion < 0:
		c.Cluster.TransactionVersion = 0
	}
	if c.Cluster.TxnTopicPartitions <= 0 {
		c.Cluster.TxnTopicPartitions = DefaultOffsetsTopicPartitions
	}
	if c.Cluster.TxnTopicReplicationFactor <= 0 {
		c.Cluster.TxnTopicReplicationFactor = DefaultOffsetsTopicReplicationFactor
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.EngineOptions.Clock == nil {
		c.EngineOptions.Clock = c.Clock
	}
	if c.EngineOptions.Logger == nil {
		c.EngineOptions.Logger = c.Logger
	}
	return c
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (c Config) validate() error {
	if c.Dir == "" {
		return errors.New("broker: Config.Dir is required")
	}
	if _, err := engine.Lookup(c.Engine); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if c.AdvertisedAddr != "" {
		if _, _, err := splitHostPort(c.AdvertisedAddr); err != nil {
			return fmt.Errorf("broker: advertised address: %w", err)
		}
	}
	if c.NodeID < 0 {
		return fmt.Errorf("broker: node id %d: want 0 or more", c.NodeID)
	}
	minST, maxST := orDefault(c.Groups.MinSessionTimeout, group.DefaultMinSessionTimeout), orDefault(c.Groups.MaxSessionTimeout, group.DefaultMaxSessionTimeout)
	if minST > maxST {
		return fmt.Errorf("broker: group min session timeout %v above the max %v", minST, maxST)
	}
	if len(c.Controllers) > 0 {
		seen := map[int32]bool{}
		self := false
		for _, v := range c.Controllers {
			if seen[v.ID] || v.ID < 0 {
				return fmt.Errorf("broker: controller voter %d listed twice or negative", v.ID)
			}
			if _, _, err := splitHostPort(v.Addr); err != nil {
				return fmt.Errorf("broker: controller voter %d address %q: %w", v.ID, v.Addr, err)
			}
			seen[v.ID] = true
			self = self || v.ID == c.NodeID
		}
		if self && len(c.Controllers) > 1 && c.ControllerAddr == "" {
			return errors.New("broker: a controller address is required for a voter among several")
		}
	}
	return nil
}

// isVoter reports whether this node is one of the controller quorum's voters.
func (c Config) isVoter() bool {
	for _, v := range c.voters() {
		if v.ID == c.NodeID {
			return true
		}
	}
	return false
}

// voters is the quorum's voter set: Controllers, or this node alone.
func (c Config) voters() []Voter {
	if len(c.Controllers) == 0 {
		return []Voter{{ID: c.NodeID, Addr: c.ControllerAddr}}
	}
	return c.Controllers
}

// ParseVoters reads the -controllers flag: id@host:port, comma separated.
func ParseVoters(s string) ([]Voter, error) {
	var out []Voter
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		idStr, addr, ok := strings.Cut(part, "@")
		id, err := strconv.ParseInt(idStr, 10, 32)
		if !ok || err != nil || id < 0 {
			return nil, fmt.Errorf("controller voter %q: want id@host:port", part)
		}
		if _, _, err := splitHostPort(addr); err != nil {
			return nil, fmt.Errorf("controller voter %q: %w", part, err)
		}
		out = append(out, Voter{ID: int32(id), Addr: addr})
	}
	return out, nil
}

// splitHostPort splits host:port with a numeric port.
func splitHostPort(addr string) (string, int32, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port of %q: %w", addr, err)
	}
	return host, int32(port), nil
}
