package quorum

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// ErrVotersChanged: the configured voter list is not the one the node was
// bootstrapped with. The quorum does not reconfigure: start the node with
// the voter list it was created with.
var ErrVotersChanged = errors.New("quorum: voter list differs from the one on disk (reconfiguration is not supported)")

// ErrWrongCluster: the directory belongs to another cluster or node id.
// Point the node at its own directory.
var ErrWrongCluster = errors.New("quorum: directory belongs to another cluster or node")

// meta is what META holds: who this node is, in which cluster, among whom.
// Its payload:
//
//	+-------------+------------+---------+-------+-------------------+
//	| cluster len | cluster id | node id | count | count × voter id  |
//	|      2      |    len     |    8    |   4   |     count × 8     |
//	+-------------+------------+---------+-------+-------------------+
type meta struct {
	clusterID string
	nodeID    uint64
	voters    []uint64 // sorted, unique
}

func (m meta) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(m.clusterID)))
	b = append(b, m.clusterID...)
	b = binary.BigEndian.AppendUint64(b, m.nodeID)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.voters)))
	for _, v := range m.voters {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

func decodeMeta(b []byte) (meta, error) {
	var m meta
	if len(b) < 2 {
		return m, fmt.Errorf("%w: META too short", ErrCorrupt)
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if len(b) < n+12 {
		return m, fmt.Errorf("%w: META too short", ErrCorrupt)
	}
	m.clusterID = string(b[:n])
	b = b[n:]
	m.nodeID = binary.BigEndian.Uint64(b)
	count := binary.BigEndian.Uint32(b[8:])
	b = b[12:]
	if uint64(len(b)) != uint64(count)*8 {
		return m, fmt.Errorf("%w: META holds %d bytes for %d voters", ErrCorrupt, len(b), count)
	}
	for i := range count {
		m.voters = append(m.voters, binary.BigEndian.Uint64(b[8*i:]))
	}
	return m, nil
}

// check refuses to run with a configuration other than the one on disk.
func (m meta) check(want meta) error {
	if m.clusterID != want.clusterID {
		return fmt.Errorf("%w: cluster id on disk %q, configured %q", ErrWrongCluster, m.clusterID, want.clusterID)
	}
	if m.nodeID != want.nodeID {
		return fmt.Errorf("%w: node id on disk %d, configured %d", ErrWrongCluster, m.nodeID, want.nodeID)
	}
	if !slices.Equal(m.voters, want.voters) {
		return fmt.Errorf("%w: on disk %v, configured %v", ErrVotersChanged, m.voters, want.voters)
	}
	return nil
}

// normalizeVoters sorts and checks a voter list: ids are non-zero and unique.
func normalizeVoters(voters []uint64) ([]uint64, error) {
	v := slices.Clone(voters)
	slices.Sort(v)
	if len(v) == 0 {
		return nil, errors.New("no voters")
	}
	if v[0] == 0 {
		return nil, errors.New("voter id 0 is reserved")
	}
	for i := 1; i < len(v); i++ {
		if v[i] == v[i-1] {
			return nil, fmt.Errorf("voter %d listed twice", v[i])
		}
	}
	return v, nil
}

// VoterDigest identifies a voter list, in any order: the first 8 bytes of
// the SHA-256 of the sorted ids. Transports compare digests in their
// handshake so that controllers started with different voter lists refuse
// each other instead of electing two leaders.
func VoterDigest(voters []uint64) uint64 {
	v := slices.Clone(voters)
	slices.Sort(v)
	h := sha256.New()
	for _, id := range v {
		h.Write(binary.BigEndian.AppendUint64(nil, id))
	}
	return binary.BigEndian.Uint64(h.Sum(nil))
}
