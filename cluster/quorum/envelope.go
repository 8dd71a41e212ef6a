package quorum

import (
	"encoding/binary"
	"fmt"
)

// ProposalID names one proposal of one Node incarnation. Output.Applied
// reports it with the index its entry was applied at.
type ProposalID uint64

// An entry's data is an envelope around the proposal's payload, so that a
// waiter is completed only by its own entry: not by an entry proposed by an
// earlier incarnation of this node (whose sequence numbers restart), nor by
// another node's. The StateMachine sees the payload only.
//
//	+---------+---------+-------------+----------+---------+
//	| version | node id | incarnation | sequence | payload |
//	|    1    |    8    |      8      |    8     |   ...   |
//	+---------+---------+-------------+----------+---------+
//
// An entry with no data is raft's own (a new leader's empty entry).
const (
	envelopeVersion = 1
	envelopeLen     = 25
)

type envelope struct {
	node, incarnation uint64
	seq               ProposalID
}

func (e envelope) wrap(payload []byte) []byte {
	b := make([]byte, 0, envelopeLen+len(payload))
	b = append(b, envelopeVersion)
	b = binary.BigEndian.AppendUint64(b, e.node)
	b = binary.BigEndian.AppendUint64(b, e.incarnation)
	b = binary.BigEndian.AppendUint64(b, uint64(e.seq))
	return append(b, payload...)
}

func unwrap(data []byte) (envelope, []byte, error) {
	if len(data) < envelopeLen || data[0] != envelopeVersion {
		return envelope{}, nil, fmt.Errorf("%w: entry of %d bytes is not a proposal envelope", ErrCorrupt, len(data))
	}
	e := envelope{
		node:        binary.BigEndian.Uint64(data[1:]),
		incarnation: binary.BigEndian.Uint64(data[9:]),
		seq:         ProposalID(binary.BigEndian.Uint64(data[17:])),
	}
	return e, data[envelopeLen:], nil
}
