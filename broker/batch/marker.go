package batch

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Marker is a transaction marker: the control record that ends producer's
// transaction in one partition. Its batch is transactional and control,
// uncompressed, holds one record and carries the producer's id and epoch;
// the record's key is kmsg.ControlRecordKey (version 0, type 0 abort or 1
// commit) and its value kmsg.EndTxnMarker (version 0, the coordinator
// epoch). Kafka's consumers read it by these rules and skip it.
type Marker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// EncodeMarker builds the marker batch of pr's transaction, base offset 0.
func EncodeMarker(pr Producer, m Marker, now time.Time) []byte {
	typ := kmsg.ControlRecordKeyType(0)
	if m.Commit {
		typ = 1
	}
	key := (&kmsg.ControlRecordKey{Type: typ}).AppendTo(nil)
	value := (&kmsg.EndTxnMarker{CoordinatorEpoch: m.CoordinatorEpoch}).AppendTo(nil)
	return encode([]KV{{Key: key, Value: value}}, attrTransactional|attrControl, pr, now)
}

// ParseMarker reads the marker of a stored control batch b (one the broker
// wrote with EncodeMarker, or a leader did and a follower copied).
// A control batch that is not a commit or abort marker, or is damaged,
// returns kerr.CorruptMessage.
func ParseMarker(b []byte) (Marker, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Marker{}, err
	}
	if !h.Attributes.Control() || h.Attributes.Codec() != CodecNone || h.NumRecords != 1 {
		return Marker{}, corrupt("not a marker: attributes %#x, %d records", uint16(h.Attributes), h.NumRecords)
	}
	recs := b[HeaderSize:]
	l, n := binary.Varint(recs)
	if n <= 0 || l < 0 || int64(len(recs)-n) < l {
		return Marker{}, corrupt("marker record: bad length")
	}
	var r kmsg.Record
	if err := r.ReadFrom(recs[:n+int(l)]); err != nil {
		return Marker{}, corrupt("marker record: %v", err)
	}
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(r.Key); err != nil || key.Type > 1 {
		return Marker{}, corrupt("marker key %x", r.Key)
	}
	var value kmsg.EndTxnMarker
	if err := value.ReadFrom(r.Value); err != nil {
		return Marker{}, corrupt("marker value %x", r.Value)
	}
	return Marker{Commit: key.Type == 1, CoordinatorEpoch: value.CoordinatorEpoch}, nil
}
