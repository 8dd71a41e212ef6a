package quorum

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Magic opens every raft connection. Read as a big-endian int32 it is
// negative, so it can never be the length that opens a Kafka request: a
// listener shared with Kafka-protocol APIs tells the two apart from the
// first 4 bytes (see PeekConn).
const Magic uint32 = 0xF06D6B72 // "\xf0mkr": mini-kafka raft

// handshakeVersion is the transport's protocol version.
const handshakeVersion = 1

// A connection starts with a hello from the dialer and one back from the
// acceptor, then carries frames one way, dialer to acceptor:
//
//	hello: +-------+---------+--------+------+----+--------------+-------------+------------+
//	       | Magic | version | status | from | to | voter digest | cluster id  | reason     |
//	       |   4   |    2    |   1    |  8   | 8  |      8       | 2 + length  | 2 + length |
//	       +-------+---------+--------+------+----+--------------+-------------+------------+
//	frame: +---------+------------------------------+
//	       | length  | raftpb.Message.Marshal()     |
//	       |    4    |   length bytes               |
//	       +---------+------------------------------+
//
// Integers are big-endian. A dialer's hello has status helloRequest; the
// acceptor answers helloAccepted, or helloRefused with the reason, and
// closes. Each side checks the other's cluster id and voter digest, so a
// mismatch is logged on both.
const (
	helloRequest  = 0
	helloAccepted = 1
	helloRefused  = 2

	helloFixedLen = 4 + 2 + 1 + 8 + 8 + 8
	helloMaxText  = 1 << 10
)

type hello struct {
	version     uint16
	status      uint8
	from, to    uint64
	voterDigest uint64
	clusterID   string
	reason      string
}

func (h hello) encode() []byte {
	b := binary.BigEndian.AppendUint32(nil, Magic)
	b = binary.BigEndian.AppendUint16(b, h.version)
	b = append(b, h.status)
	b = binary.BigEndian.AppendUint64(b, h.from)
	b = binary.BigEndian.AppendUint64(b, h.to)
	b = binary.BigEndian.AppendUint64(b, h.voterDigest)
	b = appendText(b, h.clusterID)
	return appendText(b, h.reason)
}

func appendText(b []byte, s string) []byte {
	s = s[:min(len(s), helloMaxText)]
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func readHello(r io.Reader) (hello, error) {
	var h hello
	var fixed [helloFixedLen]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return h, fmt.Errorf("read hello: %w", err)
	}
	if m := binary.BigEndian.Uint32(fixed[:]); m != Magic {
		return h, fmt.Errorf("not a raft connection (first bytes %08x)", m)
	}
	h.version = binary.BigEndian.Uint16(fixed[4:])
	h.status = fixed[6]
	h.from = binary.BigEndian.Uint64(fixed[7:])
	h.to = binary.BigEndian.Uint64(fixed[15:])
	h.voterDigest = binary.BigEndian.Uint64(fixed[23:])
	var err error
	if h.clusterID, err = readText(r); err != nil {
		return h, err
	}
	if h.reason, err = readText(r); err != nil {
		return h, err
	}
	return h, nil
}

func readText(r io.Reader) (string, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", fmt.Errorf("read hello: %w", err)
	}
	l := binary.BigEndian.Uint16(n[:])
	if l > helloMaxText {
		return "", fmt.Errorf("hello text of %d bytes", l)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("read hello: %w", err)
	}
	return string(b), nil
}

// mismatch is why a peer's hello is refused, from this side's point of
// view ("local" is this node), or "" if it is acceptable.
func (t *TCPTransport) mismatch(h hello, wantFrom uint64) string {
	switch {
	case h.version != handshakeVersion:
		return fmt.Sprintf("protocol version mismatch: local %d, peer %d", handshakeVersion, h.version)
	case h.clusterID != t.cfg.ClusterID:
		return fmt.Sprintf("cluster id mismatch: local %s, peer %s", t.cfg.ClusterID, h.clusterID)
	case h.voterDigest != t.digest:
		return fmt.Sprintf("voter list mismatch: local voters %v (digest %016x), peer digest %016x", t.ids, t.digest, h.voterDigest)
	case h.to != t.cfg.NodeID:
		return fmt.Sprintf("node id mismatch: the peer dialled node %d, this is node %d", h.to, t.cfg.NodeID)
	case wantFrom != 0 && h.from != wantFrom:
		return fmt.Sprintf("node id mismatch: dialled node %d, node %d answered", wantFrom, h.from)
	case !slices.Contains(t.ids, h.from) || h.from == t.cfg.NodeID:
		return fmt.Sprintf("node %d is not another voter of %v", h.from, t.ids)
	}
	return ""
}

// writeFrame writes one length-prefixed frame.
func writeFrame(w *bufio.Writer, b []byte) error {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

// readFrame reads one frame of at most max bytes into buf (grown as needed).
func readFrame(r *bufio.Reader, buf []byte, max int) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return buf, err
	}
	l := binary.BigEndian.Uint32(n[:])
	if uint64(l) > uint64(max) {
		return buf, fmt.Errorf("frame of %d bytes, over the %d-byte limit", l, max)
	}
	if cap(buf) < int(l) {
		buf = make([]byte, l)
	}
	buf = buf[:l]
	_, err := io.ReadFull(r, buf)
	return buf, err
}

// IsMagic reports whether the first 4 bytes of a connection are Magic.
func IsMagic(first []byte) bool {
	return len(first) >= 4 && binary.BigEndian.Uint32(first) == Magic
}

// PeekConn reads the first 4 bytes of an accepted connection, waiting up to
// timeout (0: no limit), and reports whether they are Magic: a raft
// connection. The bytes are not consumed: the returned conn replays them,
// so hand it as it is to TCPTransport.ServeConn (raft) or to the Kafka
// server (anything else).
func PeekConn(nc net.Conn, timeout time.Duration) (net.Conn, bool, error) {
	br := bufio.NewReader(nc)
	if timeout > 0 {
		nc.SetReadDeadline(time.Now().Add(timeout))
	}
	first, err := br.Peek(4)
	if timeout > 0 {
		nc.SetReadDeadline(time.Time{})
	}
	return &peekedConn{Conn: nc, r: br}, err == nil && IsMagic(first), err
}

// peekedConn is a net.Conn whose reads start with the bytes PeekConn read.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// ParseVoters parses the voters flag, Kafka's controller.quorum.voters
// syntax: "1@host:port,2@host:port,...".
func ParseVoters(s string) (map[uint64]string, error) {
	voters := map[uint64]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		idStr, addr, ok := strings.Cut(part, "@")
		if !ok {
			return nil, fmt.Errorf("quorum: voter %q: want id@host:port", part)
		}
		id, err := strconv.ParseUint(idStr, 10, 64)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("quorum: voter %q: the id must be a positive integer", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("quorum: voter %q: %w", part, err)
		}
		if _, dup := voters[id]; dup {
			return nil, fmt.Errorf("quorum: voter %d listed twice", id)
		}
		voters[id] = addr
	}
	if len(voters) == 0 {
		return nil, errors.New("quorum: no voters")
	}
	return voters, nil
}
