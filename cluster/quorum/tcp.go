package quorum

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/minikafka/minikafka/clock"
)

// Defaults for zero TCPConfig fields.
const (
	DefaultQueueSize        = 1024
	DefaultDialTimeout      = 2 * time.Second
	DefaultWriteTimeout     = 10 * time.Second
	DefaultHandshakeTimeout = 5 * time.Second
	DefaultBackoffMin       = 50 * time.Millisecond
	DefaultBackoffMax       = 2 * time.Second
	DefaultMaxFrameBytes    = 256 << 20
)

// TCPConfig configures a TCPTransport.
type TCPConfig struct {
	NodeID    uint64
	ClusterID string
	// Voters maps every voter's id, this node's included, to its controller
	// address (host:port): see ParseVoters.
	Voters map[uint64]string
	// Clock paces reconnection backoff. Nil means clock.Real. (Socket
	// deadlines are the network's own, in real time.)
	Clock  clock.Clock
	Logger *slog.Logger
	// QueueSize bounds the messages waiting for one peer's connection;
	// beyond it they are dropped (raft resends). Default DefaultQueueSize.
	QueueSize int
	// DialTimeout, WriteTimeout and HandshakeTimeout bound the network calls.
	DialTimeout, WriteTimeout, HandshakeTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait between failed dials, which
	// doubles from the one to the other.
	BackoffMin, BackoffMax time.Duration
	// MaxFrameBytes bounds one inbound message (snapshots are the large
	// ones). Default DefaultMaxFrameBytes.
	MaxFrameBytes int
}

// TCPTransport carries raft messages over TCP: one outbound connection per
// peer, fed by a bounded queue and redialled with backoff; inbound
// connections are handed over by whoever owns the listener (ServeConn),
// because the controller's port is shared with Kafka-protocol APIs.
type TCPTransport struct {
	cfg    TCPConfig
	ids    []uint64 // sorted voters
	digest uint64
	log    *slog.Logger
	peers  map[uint64]*peer

	mu      sync.Mutex
	h       Handler
	inbound map[net.Conn]struct{}
	latest  map[uint64]net.Conn // each peer's newest inbound connection
	closed  bool
	refused map[string]bool // refusals already logged at error level

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ Transport = (*TCPTransport)(nil)

// NewTCPTransport returns a transport for cfg.NodeID; Start dials the peers.
func NewTCPTransport(cfg TCPConfig) (*TCPTransport, error) {
	ids := slices.Sorted(maps.Keys(cfg.Voters))
	if _, ok := cfg.Voters[cfg.NodeID]; !ok {
		return nil, fmt.Errorf("quorum: node %d is not one of the voters %v", cfg.NodeID, ids)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	setDefault(&cfg.QueueSize, DefaultQueueSize)
	setDefault(&cfg.MaxFrameBytes, DefaultMaxFrameBytes)
	setDefault(&cfg.DialTimeout, DefaultDialTimeout)
	setDefault(&cfg.WriteTimeout, DefaultWriteTimeout)
	setDefault(&cfg.HandshakeTimeout, DefaultHandshakeTimeout)
	setDefault(&cfg.BackoffMin, DefaultBackoffMin)
	setDefault(&cfg.BackoffMax, DefaultBackoffMax)
	t := &TCPTransport{
		cfg:     cfg,
		ids:     ids,
		digest:  VoterDigest(ids),
		log:     cfg.Logger.With("raft-id", cfg.NodeID),
		peers:   map[uint64]*peer{},
		inbound: map[net.Conn]struct{}{},
		latest:  map[uint64]net.Conn{},
		refused: map[string]bool{},
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	for _, id := range ids {
		if id != cfg.NodeID {
			t.peers[id] = &peer{t: t, id: id, addr: cfg.Voters[id], queue: make(chan raftpb.Message, cfg.QueueSize), back: make(chan struct{}, 1)}
		}
	}
	return t, nil
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Start implements Transport: it begins dialling every peer.
func (t *TCPTransport) Start(h Handler) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if t.h != nil {
		return errors.New("quorum: transport already started")
	}
	t.h = h
	for _, id := range t.ids {
		if p := t.peers[id]; p != nil {
			t.wg.Add(1)
			go p.run()
		}
	}
	return nil
}

func (t *TCPTransport) handler() Handler {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.h
}

// Send implements Transport: each message joins its peer's queue, or is
// dropped when the queue is full.
func (t *TCPTransport) Send(msgs []raftpb.Message) {
	for _, m := range msgs {
		p := t.peers[m.To]
		if p == nil {
			t.log.Debug("quorum: message to an unknown node dropped", "to", m.To, "type", m.Type)
			continue
		}
		select {
		case p.queue <- m:
		default:
			reportDropped(t.handler(), m)
		}
	}
}

// Close implements Transport: it stops the dialers and closes every
// connection, inbound ones included (their ServeConn calls return).
func (t *TCPTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	for c := range t.inbound {
		c.Close()
	}
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
	return nil
}

// ServeConn serves an inbound raft connection until it fails or the
// transport closes. nc's first bytes must be Magic, not yet consumed: pass
// the conn PeekConn returned. ServeConn closes nc.
func (t *TCPTransport) ServeConn(nc net.Conn) {
	defer nc.Close()
	t.mu.Lock()
	h, closed := t.h, t.closed
	if !closed {
		t.inbound[nc] = struct{}{}
	}
	t.mu.Unlock()
	if closed {
		return
	}
	defer func() {
		t.mu.Lock()
		delete(t.inbound, nc)
		t.mu.Unlock()
	}()
	from, br, err := t.acceptHello(nc, h)
	if err != nil {
		return
	}
	t.mu.Lock()
	t.latest[from] = nc
	t.mu.Unlock()
	h.PeerBack(from)
	if p := t.peers[from]; p != nil {
		select {
		case p.back <- struct{}{}:
		default:
		}
	}
	var buf []byte
	for {
		if buf, err = readFrame(br, buf, t.cfg.MaxFrameBytes); err != nil {
			t.log.Debug("quorum: inbound raft connection ends", "peer", from, "err", err)
			t.peerGone(h, from, nc)
			return
		}
		var m raftpb.Message
		if err := m.Unmarshal(buf); err != nil {
			t.log.Warn("quorum: undecodable raft message, closing the connection", "peer", from, "err", err)
			return
		}
		if m.From != from || m.To != t.cfg.NodeID {
			t.log.Warn("quorum: misaddressed raft message, closing the connection", "peer", from, "from", m.From, "to", m.To)
			return
		}
		h.Step(m)
	}
}

// peerGone reports that the peer's inbound connection nc ended, unless the
// transport is closing or the peer has connected again since (the older
// connection's end may be noticed after the newer one's hello).
func (t *TCPTransport) peerGone(h Handler, from uint64, nc net.Conn) {
	t.mu.Lock()
	latest := t.latest[from] == nc
	if latest {
		delete(t.latest, from)
	}
	closing := t.closed
	t.mu.Unlock()
	if latest && !closing {
		h.PeerGone(from)
	}
}

// acceptHello reads the dialer's hello and answers it. It returns the
// peer's id, or an error once it has refused the connection.
func (t *TCPTransport) acceptHello(nc net.Conn, h Handler) (uint64, *bufio.Reader, error) {
	nc.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
	br := bufio.NewReaderSize(nc, 64<<10)
	in, err := readHello(br)
	if err != nil {
		t.log.Warn("quorum: bad raft handshake", "addr", nc.RemoteAddr(), "err", err)
		return 0, nil, err
	}
	reason := t.mismatch(in, 0)
	if reason == "" && h == nil {
		reason = "the controller is not serving yet"
	}
	out := hello{version: handshakeVersion, status: helloAccepted, from: t.cfg.NodeID, to: in.from, voterDigest: t.digest, clusterID: t.cfg.ClusterID}
	if reason != "" {
		out.status, out.reason = helloRefused, reason
		// Once per peer and reason at error level: the peer retries.
		key := fmt.Sprintf("%d %s", in.from, reason)
		t.mu.Lock()
		level := slog.LevelDebug
		if !t.refused[key] {
			t.refused[key], level = true, slog.LevelError
		}
		t.mu.Unlock()
		t.log.Log(context.Background(), level, "quorum: refused a raft connection: "+reason, "peer", in.from, "addr", nc.RemoteAddr())
	}
	_, werr := nc.Write(out.encode())
	nc.SetDeadline(time.Time{})
	if reason != "" {
		return 0, nil, errors.New(reason)
	}
	if werr != nil {
		return 0, nil, werr
	}
	return in.from, br, nil
}

// peer is the outbound side towards one voter.
type peer struct {
	t     *TCPTransport
	id    uint64
	addr  string
	queue chan raftpb.Message
	// back is signalled when the peer dials in: it is up again, so the
	// dialer's backoff (up to BackoffMax after a long outage) ends.
	back chan struct{}
}

func (p *peer) run() {
	defer p.t.wg.Done()
	t := p.t
	backoff := t.cfg.BackoffMin
	lastErr := ""
	for t.ctx.Err() == nil {
		nc, err := p.dial()
		if err != nil {
			if t.ctx.Err() != nil {
				return
			}
			// Say it once per new reason: a peer that stays down is not news.
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				var refused *refusedError
				if errors.As(err, &refused) {
					t.log.Error("quorum: raft connection refused: "+msg, "peer", p.id, "addr", p.addr)
				} else {
					t.log.Warn("quorum: cannot reach a voter", "peer", p.id, "addr", p.addr, "err", err)
				}
			}
			p.dropQueued()
			if !p.wait(backoff) {
				return
			}
			backoff = min(2*backoff, t.cfg.BackoffMax)
			continue
		}
		if lastErr != "" {
			t.log.Info("quorum: connected to a voter", "peer", p.id, "addr", p.addr)
		}
		backoff, lastErr = t.cfg.BackoffMin, ""
		err = p.stream(nc)
		nc.Close()
		if t.ctx.Err() != nil {
			return
		}
		t.log.Debug("quorum: raft connection lost", "peer", p.id, "err", err)
		t.handler().ReportUnreachable(p.id)
	}
}

// stopConn is a conn that stops its close-on-shutdown hook when closed.
type stopConn struct {
	net.Conn
	stop func() bool
}

func (c *stopConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// refusedError is a handshake the other side, or this one, refused.
type refusedError struct{ reason string }

func (e *refusedError) Error() string { return e.reason }

// dial connects to the peer and shakes hands.
func (p *peer) dial() (net.Conn, error) {
	t := p.t
	d := net.Dialer{Timeout: t.cfg.DialTimeout}
	raw, err := d.DialContext(t.ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	// Close interrupts a handshake or a write stuck on a peer that does not
	// read, instead of waiting out their timeouts.
	nc := &stopConn{Conn: raw, stop: context.AfterFunc(t.ctx, func() { raw.Close() })}
	nc.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
	out := hello{version: handshakeVersion, status: helloRequest, from: t.cfg.NodeID, to: p.id, voterDigest: t.digest, clusterID: t.cfg.ClusterID}
	if _, err := nc.Write(out.encode()); err != nil {
		nc.Close()
		return nil, fmt.Errorf("handshake: %w", err)
	}
	in, err := readHello(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("handshake: %w", err)
	}
	nc.SetDeadline(time.Time{})
	// Our own comparison first, so that the operator reads "local" as this
	// node on both sides; the peer's reason when ours finds nothing.
	if reason := t.mismatch(in, p.id); reason != "" {
		nc.Close()
		return nil, &refusedError{reason}
	}
	if in.status != helloAccepted {
		nc.Close()
		return nil, &refusedError{"the peer refused: " + in.reason}
	}
	return nc, nil
}

// stream writes queued messages to nc until a write fails or the transport
// closes. The peer never writes after its hello: a read that returns means
// the connection is gone, and closing it wakes the writer.
func (p *peer) stream(nc net.Conn) error {
	t := p.t
	go func() {
		var b [1]byte
		nc.Read(b[:])
		nc.Close()
	}()
	bw := bufio.NewWriterSize(nc, 64<<10)
	var snaps []uint64 // MsgSnaps in the unflushed batch
	for {
		var m raftpb.Message
		select {
		case <-t.ctx.Done():
			return t.ctx.Err()
		case m = <-p.queue:
		}
		snaps = snaps[:0]
		for more := true; more; {
			b, err := m.Marshal()
			if err != nil {
				return fmt.Errorf("marshal %s: %w", m.Type, err)
			}
			if m.Type == raftpb.MsgSnap {
				snaps = append(snaps, m.To)
			}
			nc.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
			if err := writeFrame(bw, b); err != nil {
				p.reportSnaps(snaps, raft.SnapshotFailure)
				return err
			}
			select { // batch what queued meanwhile into one flush
			case m = <-p.queue:
			default:
				more = false
			}
		}
		if err := bw.Flush(); err != nil {
			p.reportSnaps(snaps, raft.SnapshotFailure)
			return err
		}
		p.reportSnaps(snaps, raft.SnapshotFinish)
	}
}

func (p *peer) reportSnaps(snaps []uint64, status raft.SnapshotStatus) {
	for _, id := range snaps {
		p.t.handler().ReportSnapshot(id, status)
	}
}

// dropQueued drops what waits for a peer that cannot be reached, so that it
// does not get a stale burst on reconnection.
func (p *peer) dropQueued() {
	h := p.t.handler()
	for {
		select {
		case m := <-p.queue:
			reportDropped(h, m)
		default:
			return
		}
	}
}

// wait sleeps d on the transport's clock; false if the transport closed.
func (p *peer) wait(d time.Duration) bool {
	tm := p.t.cfg.Clock.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C():
		return true
	case <-p.back:
		return true
	case <-p.t.ctx.Done():
		return false
	}
}
