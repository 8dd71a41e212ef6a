package broker

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/cluster/quorum"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/segment"
)

// This node's part of the cluster: every broker is a controller voter
// (Config.Controllers; a one-node cluster when empty). The quorum (package
// quorum, etcd raft) replicates the metadata log into a cluster.Store, the
// controller (controller.go, a cluster.ControllerCore) decides on it when this node leads the
// quorum, and the rest of the broker reads the Store's images.
//
// On disk, beside the partitions:
//
//	Dir/node.meta      this node's id and its cluster's id, checked on every start
//	Dir/metadata/      the quorum: raft log (a segment engine), hard state, snapshot
//	Dir/clean-shutdown the broker epoch of a clean shutdown, removed at the next start

const (
	nodeMetaFile = "node.meta"
	// cleanShutdownFile holds the broker epoch of the last clean shutdown,
	// written once every partition is synced and closed and removed at the
	// next start, so that a start without it follows a crash: the broker
	// registers saying so (PreviousBrokerEpoch -1) and the controller takes
	// it out of every ELR (KIP-966), as it may have lost what it had not
	// synced.
	cleanShutdownFile  = "clean-shutdown"
	cleanShutdownMagic = "MKCS"
	metadataDir        = "metadata"
	// metadataEngine keeps the metadata log whatever engine the partitions
	// use: it must be durable (the memory engine's partitions lose their
	// records on a restart, not their topics) and it is small.
	metadataEngine = segment.Name
)

// electionTicks is the quorum's election timeout in raft ticks (50 ms): a
// follower campaigns 0.4 to 0.8 s after it last heard from its leader, and
// a leader that has not heard from a quorum for 0.4 s stops acting.
// Kafka's controller.quorum.election.timeout.ms is 1 s.
const electionTicks = 8

// raftID is node id's id in raft, where 0 means "none": Kafka's node ids
// start at 0.
func raftID(id int32) uint64 { return uint64(id) + 1 }

// nodeID is the inverse of raftID; -1 for raft's "none".
func nodeID(r uint64) int32 { return int32(r) - 1 }

// openCluster opens this node's part of the cluster: for a voter its
// quorum and controller, for a broker that is not one the follower of the
// voters' metadata log. It runs after the partitions are open and before
// anything is served.
func (s *Server) openCluster() error {
	fs := s.fs()
	dirID, err := checkNodeMeta(fs, s.cfg.Dir, s.cfg.NodeID, s.cfg.ClusterID)
	if err != nil {
		return err
	}
	previous, err := takeCleanShutdown(fs, s.cfg.Dir)
	if err != nil {
		return err
	}
	s.life = newLifecycle(s, previous, dirID)
	s.store = cluster.NewStore()
	var log metadataLog = notAVoter{}
	if s.cfg.isVoter() {
		if err := s.openQuorum(); err != nil {
			return err
		}
		log = quorumLog{s.quorum}
	}
	core := cluster.NewControllerCore(cluster.CoreConfig{
		NodeID:    s.cfg.NodeID,
		ClusterID: s.cfg.ClusterID,
		Settings: cluster.Settings{
			MinInsyncReplicas:        s.cfg.Cluster.MinInsyncReplicas,
			UncleanLeaderElection:    s.cfg.Cluster.UncleanLeaderElection,
			DefaultPartitions:        s.cfg.DefaultPartitions,
			DefaultReplicationFactor: s.cfg.Cluster.DefaultReplicationFactor,
			MaxPartitions:            s.cfg.MaxPartitions,
		},
		// A process that restarts must not repeat the topic ids it made
		// before: a fresh seed each start.
		Seed:              randomSeed(),
		SessionTimeout:    s.cfg.Cluster.SessionTimeout,
		RebalanceInterval: s.cfg.Cluster.LeaderRebalanceInterval,
		Logger:            s.log,
	})
	s.ctl = newController(s, core, log)
	ctx, cancel := context.WithCancel(context.Background())
	s.stopController = cancel
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.ctl.run(ctx)
	}()
	if s.quorum == nil {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.followMetadata(ctx)
		}()
	}
	return nil
}

// randomSeed is a seed from crypto/rand.
func randomSeed() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// openQuorum opens this voter's raft node over the metadata log.
func (s *Server) openQuorum() error {
	fs := s.fs()
	voters := s.cfg.voters()
	ids := make([]uint64, len(voters))
	addrs := map[uint64]string{}
	for i, v := range voters {
		ids[i] = raftID(v.ID)
		addrs[ids[i]] = v.Addr
	}
	var tr quorum.Transport = noPeers{}
	if len(voters) > 1 {
		tcp, err := quorum.NewTCPTransport(quorum.TCPConfig{
			NodeID: raftID(s.cfg.NodeID), ClusterID: s.cfg.ClusterID, Voters: addrs,
			Clock: s.cfg.Clock, Logger: quorumLogger(s.log, "raft-transport"),
		})
		if err != nil {
			return fmt.Errorf("broker: controller transport: %w", err)
		}
		s.raftTransport, tr = tcp, tcp
	}
	q, err := quorum.NewServer(quorum.ServerConfig{
		Node: quorum.NodeConfig{
			NodeID: raftID(s.cfg.NodeID), Voters: ids, ClusterID: s.cfg.ClusterID,
			Dir: fs.PathJoin(s.cfg.Dir, metadataDir), FS: fs, Engine: metadataEngine,
			StateMachine: s.store, Logger: quorumLogger(s.log, "quorum"),
			ElectionTicks: electionTicks,
		},
		Transport:    tr,
		Clock:        s.cfg.Clock,
		TickInterval: s.cfg.Cluster.TickInterval,
		OnFail:       func(err error) { s.fail(fmt.Errorf("broker: the metadata log failed: %w", err)) },
	})
	if err != nil {
		return fmt.Errorf("broker: open the metadata quorum: %w", err)
	}
	s.quorum = q
	return nil
}

// closeCluster stops the controller and the quorum.
func (s *Server) closeCluster() {
	if s.stopController != nil {
		s.stopController()
	}
	if s.quorum != nil {
		if err := s.quorum.Close(); err != nil {
			s.log.Warn("closing the metadata quorum", "err", err)
		}
	}
}

// fs is the filesystem of the data directory.
func (s *Server) fs() vfs.FS {
	if s.cfg.EngineOptions.FS != nil {
		return s.cfg.EngineOptions.FS
	}
	return vfs.Default
}

// quorumLog is the quorum as the controller's Log.
type quorumLog struct{ q *quorum.Server }

func (l quorumLog) Propose(ctx context.Context, payload []byte) (uint64, error) {
	return l.q.Propose(ctx, payload)
}
func (l quorumLog) Active() bool { return l.q.Active() }
func (l quorumLog) Leader() (int32, uint64) {
	id, term := l.q.Leader()
	return nodeID(id), term
}
func (l quorumLog) Gone() []int32 {
	var ids []int32
	for _, r := range l.q.Gone() {
		ids = append(ids, nodeID(r))
	}
	return ids
}

// notAVoter is the Log of a broker that is not a voter: it never decides,
// so its controller answers NOT_CONTROLLER and keeps only the settings.
type notAVoter struct{}

func (notAVoter) Propose(context.Context, []byte) (uint64, error) { return 0, cluster.ErrNotController }
func (notAVoter) Active() bool                                    { return false }
func (notAVoter) Leader() (int32, uint64)                         { return -1, 0 }
func (notAVoter) Gone() []int32                                   { return nil }

// quorumActive reports whether this node is the active controller.
func (s *Server) quorumActive() bool { return s.quorum != nil && s.quorum.Active() }

// activeController is the active controller's node id, when known: the
// raft leader for a voter, the voter that last answered for the others.
func (s *Server) activeController() (int32, bool) {
	if s.quorum == nil {
		return s.ctlClient.known()
	}
	id, _ := s.quorum.Leader()
	return nodeID(id), id != 0
}

// noPeers is the transport of a quorum of one.
type noPeers struct{}

func (noPeers) Start(quorum.Handler) error { return nil }
func (noPeers) Send([]raftpb.Message)      {}
func (noPeers) Close() error               { return nil }

// ServeController accepts connections on ln, this node's controller
// listener, until Close: raft connections (they start with quorum.Magic)
// go to the quorum's transport, the others are Kafka-protocol connections
// that may use the controller APIs only.
func (s *Server) ServeController(ln net.Listener) error {
	return s.serve(ln, controllerListener)
}

// routeController is how the controller listener hands over a connection.
func (s *Server) routeController(nc net.Conn) (net.Conn, bool) {
	c, isRaft, err := quorum.PeekConn(nc, s.cfg.FrameTimeout)
	if err != nil {
		nc.Close()
		return nil, false
	}
	if isRaft {
		if s.raftTransport == nil {
			s.log.Warn("refusing a raft connection: this node is a quorum of one", "remote", nc.RemoteAddr().String())
			nc.Close()
			return nil, false
		}
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.raftTransport.ServeConn(c)
		}()
		return nil, false
	}
	return c, true
}

// checkNodeMeta makes sure the data directory is this node's, of this
// cluster: a directory written under another node id or cluster id would
// make this process impersonate another broker, or join the wrong cluster.
// It returns the directory's id, made with the file when the directory is
// fresh (or written by a version without one): the controller tells a
// replaced disk by it.
func checkNodeMeta(fs vfs.FS, dir string, id int32, clusterID string) (uuid.UUID, error) {
	path := fs.PathJoin(dir, nodeMetaFile)
	got, found, err := engine.ReadFileIfExists(fs, path)
	if err != nil {
		return uuid.Nil, fmt.Errorf("broker: read %s: %w", path, err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(got), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			fields[k] = v
		}
	}
	switch {
	case found && fields["node.id"] != strconv.Itoa(int(id)):
		return uuid.Nil, fmt.Errorf("broker: %s belongs to node %s, not %d: %w", dir, fields["node.id"], id, errWrongNode)
	case found && fields["cluster.id"] != clusterID:
		return uuid.Nil, fmt.Errorf("broker: %s belongs to cluster %q, not %q: %w", dir, fields["cluster.id"], clusterID, errWrongNode)
	}
	if dirID, err := uuid.Parse(fields["log.dir.id"]); err == nil {
		return dirID, nil
	}
	dirID := uuid.New()
	want := fmt.Sprintf("node.id=%d\ncluster.id=%s\nlog.dir.id=%s\n", id, clusterID, dirID)
	if err := engine.WriteFileAtomic(fs, path, []byte(want)); err != nil {
		return uuid.Nil, fmt.Errorf("broker: write %s: %w", path, err)
	}
	return dirID, nil
}

// takeCleanShutdown reads and removes the clean shutdown marker: the broker
// epoch it holds, or -1 when the last stop was not clean.
func takeCleanShutdown(fs vfs.FS, dir string) (int64, error) {
	path := fs.PathJoin(dir, cleanShutdownFile)
	b, found, err := engine.ReadChecked(fs, path, cleanShutdownMagic)
	switch {
	case errors.Is(err, engine.ErrCorrupt):
		b = nil // torn: proves nothing, and goes
	case err != nil || !found:
		return -1, err
	}
	epoch, perr := strconv.ParseInt(string(b), 10, 64)
	if err := fs.Remove(path); err != nil {
		return -1, fmt.Errorf("broker: remove %s: %w", path, err)
	}
	if err := engine.SyncDir(fs, dir); err != nil {
		return -1, fmt.Errorf("broker: remove %s: %w", path, err)
	}
	if perr != nil {
		return -1, nil // an unreadable marker proves nothing
	}
	return epoch, nil
}

// markCleanShutdown writes the clean shutdown marker for broker epoch.
func markCleanShutdown(fs vfs.FS, dir string, epoch int64) error {
	return engine.WriteChecked(fs, fs.PathJoin(dir, cleanShutdownFile), cleanShutdownMagic, []byte(strconv.FormatInt(epoch, 10)))
}

// errWrongNode: the data directory is another node's or another cluster's.
var errWrongNode = errors.New("data directory of another node")
