// Package batch reads and validates Kafka RecordBatch v2 headers without
// decoding the records in them. The broker stores batches exactly as a
// producer sent them, with two fields patched in place (the base offset and
// the partition leader epoch, both outside the CRC), and serves them to
// consumers byte for byte; this package is everything it needs for that.
//
// # Format
//
// A RecordBatch v2, big endian, 61 bytes of header then the records:
//
//	offset size field
//	 0     8    baseOffset            patched by the broker (SetBaseOffset)
//	 8     4    batchLength           bytes after this field: len(batch) - 12
//	12     4    partitionLeaderEpoch  patched by the broker (SetPartitionLeaderEpoch)
//	16     1    magic                 2 (byte 16 holds the magic in v0/v1 too)
//	17     4    crc                   CRC-32C (Castagnoli) of bytes 21..end
//	21     2    attributes            bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control
//	23     4    lastOffsetDelta
//	27     8    firstTimestamp
//	35     8    maxTimestamp
//	43     8    producerId            -1 when not idempotent
//	51     2    producerEpoch
//	53     4    baseSequence
//	57     4    records count
//	61     ...  records (compressed as a whole when codec != 0)
//
// # Errors
//
// Every error wraps one of franz-go's kerr values so the protocol server
// turns it into an error code with errors.Is:
//
//   - kerr.CorruptMessage: the bytes are damaged or inconsistent: a length
//     that does not match, a CRC mismatch, a record count that disagrees with
//     lastOffsetDelta or with the records actually framed, an unknown
//     compression codec, a magic byte that is not a Kafka format at all.
//   - kerr.InvalidRecord: a well-formed batch this broker refuses: magic 0 or
//     1 (pre-0.11 message sets), a control batch from a client (only the
//     broker writes transaction markers), a transactional batch without a
//     producer id, an idempotent batch with a negative epoch or sequence, an
//     empty produce.
package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Layout constants of the v2 header. They are Kafka's format and never change.
const (
	// HeaderSize is the size of a RecordBatch v2 header, and so the smallest
	// possible batch (one with no record bytes).
	HeaderSize = 61
	// LengthOverhead is the part of a batch the batchLength field does not
	// count: the base offset and the length itself.
	LengthOverhead = 12

	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57

	// minRecordBytes is the smallest encoded record: length, attributes,
	// timestamp delta, offset delta, key length, value length and header count,
	// one byte each.
	minRecordBytes = 7
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Codec is a batch's compression codec (attributes bits 0-2).
type Codec int8

// The codecs Kafka defines.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLz4    Codec = 3
	CodecZstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLz4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// Attributes is the batch attributes field.
type Attributes int16

// Attribute bits.
const (
	attrCodecMask     Attributes = 0x07
	attrLogAppendTime Attributes = 0x08
	attrTransactional Attributes = 0x10
	attrControl       Attributes = 0x20
)

// Codec is the compression codec of the batch's records.
func (a Attributes) Codec() Codec { return Codec(a & attrCodecMask) }

// LogAppendTime reports whether the timestamps are the broker's append time
// rather than the producer's create time.
func (a Attributes) LogAppendTime() bool { return a&attrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (a Attributes) Transactional() bool { return a&attrTransactional != 0 }

// Control reports whether the batch holds a transaction marker.
func (a Attributes) Control() bool { return a&attrControl != 0 }

// Header is a RecordBatch v2 header.
type Header struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           Attributes
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the length of the whole batch in bytes.
func (h Header) Size() int { return LengthOverhead + int(h.BatchLength) }

// Offsets is how many offsets the batch occupies: lastOffsetDelta+1. For a
// producer's batch it equals NumRecords; a compacted batch may hold fewer
// records than the offsets it spans.
func (h Header) Offsets() int32 { return h.LastOffsetDelta + 1 }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Idempotent reports whether the batch carries a producer id, and so takes
// part in sequence checking.
func (h Header) Idempotent() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence number of the batch's last record. Sequences
// wrap from math.MaxInt32 to 0, as Kafka's do.
func (h Header) LastSequence() int32 { return AddSequence(h.BaseSequence, h.LastOffsetDelta) }

// AddSequence returns seq+n on Kafka's sequence ring, which wraps from
// math.MaxInt32 to 0. seq and n are non-negative.
func AddSequence(seq, n int32) int32 {
	const maxSeq = 1<<31 - 1
	if seq > maxSeq-n {
		return n - (maxSeq - seq) - 1
	}
	return seq + n
}

// corrupt and invalid build the package's two kinds of error.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("batch: %s: %w", fmt.Sprintf(format, args...), kerr.CorruptMessage)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("batch: %s: %w", fmt.Sprintf(format, args...), kerr.InvalidRecord)
}

// ParseHeader reads the header of the one batch b, checking only what is
// needed to read it safely: at least HeaderSize bytes, a batchLength that
// matches len(b), and magic 2. It does not verify the CRC or the record
// count: it is for batches the broker already validated and stored.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < LengthOverhead {
		return Header{}, corrupt("%d bytes is shorter than a batch length prefix", len(b))
	}
	length := int32(binary.BigEndian.Uint32(b[offLength:]))
	if int64(length)+LengthOverhead != int64(len(b)) {
		return Header{}, corrupt("batchLength %d does not match the %d bytes after it", length, len(b)-LengthOverhead)
	}
	if len(b) > offMagic {
		switch magic := int8(b[offMagic]); magic {
		case 2:
		case 0, 1:
			return Header{}, invalid("magic %d (pre-0.11 message set) is not supported, only RecordBatch v2", magic)
		default:
			return Header{}, corrupt("magic byte %d", magic)
		}
	}
	if len(b) < HeaderSize {
		return Header{}, corrupt("%d bytes is shorter than a %d-byte v2 header", len(b), HeaderSize)
	}
	be := binary.BigEndian
	return Header{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		BatchLength:          length,
		PartitionLeaderEpoch: int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           Attributes(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:       int64(be.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(be.Uint32(b[offNumRecords:])),
	}, nil
}

// Parse validates the one batch b as a producer's batch and returns its
// header. On top of ParseHeader it checks the CRC-32C, a known codec, a
// record count equal to lastOffsetDelta+1 and at least 1, the record framing
// of an uncompressed batch (the count must match the records actually there),
// and the broker's policy: no control batches (markers are the broker's own), a
// transactional batch is idempotent, and an idempotent batch has a
// non-negative epoch and sequence. See the package documentation for which
// errors are CorruptMessage and which InvalidRecord.
func Parse(b []byte) (Header, error) {
	h, err := ParseStored(b)
	if err != nil {
		return Header{}, err
	}
	if h.Attributes.Control() {
		return Header{}, invalid("a control batch from a client (attributes %#x): only the broker writes transaction markers", uint16(h.Attributes))
	}
	if h.Attributes.Transactional() && !h.Idempotent() {
		return Header{}, invalid("a transactional batch without a producer id")
	}
	if h.Idempotent() && (h.ProducerEpoch < 0 || h.BaseSequence < 0) {
		return Header{}, invalid("producer id %d with epoch %d and base sequence %d", h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	}
	return h, nil
}

// ParseStored is Parse for a batch that a broker stored: what a follower
// checks of the batches it fetches. It checks the bytes as Parse does, but
// not the producers' policy, since a leader's log also holds the broker's
// own batches: transaction markers, and transactional batches without a
// sequence.
func ParseStored(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Header{}, err
	}
	if sum := crc32.Checksum(b[offAttributes:], castagnoli); sum != h.CRC {
		return Header{}, corrupt("crc %08x, computed %08x", h.CRC, sum)
	}
	if c := h.Attributes.Codec(); c > CodecZstd {
		return Header{}, corrupt("unknown compression codec %d", c)
	}
	if h.LastOffsetDelta < 0 || h.NumRecords != h.LastOffsetDelta+1 {
		return Header{}, corrupt("records count %d with lastOffsetDelta %d", h.NumRecords, h.LastOffsetDelta)
	}
	if h.Attributes.Codec() == CodecNone {
		if err := checkFraming(b[HeaderSize:], h.NumRecords); err != nil {
			return Header{}, err
		}
	}
	return h, nil
}

// checkFraming walks the length prefixes of uncompressed records (without
// decoding them) and checks there are exactly count records filling recs.
func checkFraming(recs []byte, count int32) error {
	if int64(count)*minRecordBytes > int64(len(recs)) {
		return corrupt("records count %d cannot fit in %d record bytes", count, len(recs))
	}
	var n int32
	for len(recs) > 0 {
		length, k := binary.Varint(recs)
		if k <= 0 || length < minRecordBytes-1 || length > int64(len(recs)-k) {
			return corrupt("record %d: bad length prefix", n)
		}
		recs = recs[k+int(length):]
		n++
	}
	if n != count {
		return corrupt("records count %d but %d records framed", count, n)
	}
	return nil
}

// ErrEmpty is returned (wrapped with kerr.InvalidRecord) by Split when there
// are no batches at all.
var ErrEmpty = errors.New("batch: no record batch")

// Split cuts a Produce request's records field into its batches, using only
// each batch's length field. The returned slices alias records (capacity
// clipped to the batch). A length that is too small or runs past the end
// returns kerr.CorruptMessage; Split never allocates more than one slice
// header per 61 input bytes. Empty input returns ErrEmpty wrapped with
// kerr.InvalidRecord (Kafka refuses a produce without a batch). Each batch
// still needs Parse.
func Split(records []byte) ([][]byte, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: %w", ErrEmpty, kerr.InvalidRecord)
	}
	var out [][]byte
	for rest := records; len(rest) > 0; {
		if len(rest) < LengthOverhead {
			return nil, corrupt("batch %d: %d trailing bytes are shorter than a length prefix", len(out), len(rest))
		}
		length := int64(int32(binary.BigEndian.Uint32(rest[offLength:])))
		if length < HeaderSize-LengthOverhead {
			return nil, corrupt("batch %d: batchLength %d is below the %d-byte header", len(out), length, HeaderSize)
		}
		size := LengthOverhead + length
		if size > int64(len(rest)) {
			return nil, corrupt("batch %d: batchLength %d runs past the %d bytes left", len(out), length, len(rest)-LengthOverhead)
		}
		out = append(out, rest[:size:size])
		rest = rest[size:]
	}
	return out, nil
}

// SplitWhole is Split for a fetched record set: a partial batch at the end
// (a leader cuts a response at its byte limit, as Kafka's do) is dropped,
// not an error, and an empty set is no batches.
func SplitWhole(records []byte) ([][]byte, error) {
	var out [][]byte
	for rest := records; len(rest) >= LengthOverhead; {
		length := int64(int32(binary.BigEndian.Uint32(rest[offLength:])))
		if length < HeaderSize-LengthOverhead {
			return nil, corrupt("batch %d: batchLength %d is below the %d-byte header", len(out), length, HeaderSize)
		}
		size := LengthOverhead + length
		if size > int64(len(rest)) {
			break
		}
		out = append(out, rest[:size:size])
		rest = rest[size:]
	}
	return out, nil
}

// SetBaseOffset writes the base offset into batch b in place. The field lies
// outside the CRC, so the batch stays valid. b must hold at least a header.
func SetBaseOffset(b []byte, off int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off))
}

// SetPartitionLeaderEpoch writes the partition leader epoch into batch b in
// place; it too lies outside the CRC.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}
