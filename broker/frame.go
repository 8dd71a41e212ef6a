package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Framing: every Kafka request and response is a 4-byte big-endian length
// followed by that many bytes. The length is checked against the configured
// maximum before a byte of the body is allocated, and the body buffer grows
// only as bytes actually arrive, so a length prefix that lies costs its sender
// what it really sent, not what it claimed.

// frameChunk is how much of a frame body is allocated ahead of the bytes that
// have arrived. Frames up to this size are read with a single allocation.
const frameChunk = 1 << 20

// Errors that end a connection because of its framing.
var (
	errFrameTooLarge = errors.New("frame larger than the maximum frame size")
	errFrameNegative = errors.New("negative frame length")
	errFrameEmpty    = errors.New("empty frame")
)

// readFrameSize reads the 4-byte length prefix and checks it against max.
func readFrameSize(r io.Reader, maxBytes int32) (int32, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	switch {
	case n < 0:
		return 0, fmt.Errorf("%w: %d", errFrameNegative, n)
	case n == 0:
		return 0, errFrameEmpty
	case n > maxBytes:
		return 0, fmt.Errorf("%w: %d > %d bytes", errFrameTooLarge, n, maxBytes)
	}
	return n, nil
}

// readFrameBody reads exactly n bytes. A stream that ends early returns
// io.ErrUnexpectedEOF (a truncated frame).
func readFrameBody(r io.Reader, n int32) ([]byte, error) {
	buf := make([]byte, 0, min(int(n), frameChunk))
	for len(buf) < int(n) {
		if len(buf) == cap(buf) {
			// Double, but never past n: the buffer tracks bytes received.
			grown := make([]byte, len(buf), min(int(n), 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("frame of %d bytes after %d: %w", n, len(buf), err)
		}
	}
	return buf, nil
}

// readFrame reads one whole frame: the length prefix and the body.
func readFrame(r io.Reader, maxBytes int32) ([]byte, error) {
	n, err := readFrameSize(r, maxBytes)
	if err != nil {
		return nil, err
	}
	return readFrameBody(r, n)
}

// header is a request header, versions 0 to 2:
//
//	api_key int16 | api_version int16 | correlation_id int32 |
//	client_id nullable string (int16 length, never compact) |
//	tagged fields (v2 only, for flexible request versions)
type header struct {
	key      int16
	version  int16
	corr     int32
	clientID string
}

var errShortHeader = errors.New("request header truncated")

// parseHeaderPrefix reads the fixed part of a request header and the client
// id; it returns the rest of the frame. Tagged fields, present only when the
// request version is flexible, are skipped by skipTags.
func parseHeaderPrefix(frame []byte) (header, []byte, error) {
	var h header
	if len(frame) < 10 {
		return h, nil, errShortHeader
	}
	h.key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.corr = int32(binary.BigEndian.Uint32(frame[4:]))
	idLen := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	if idLen > 0 {
		if int(idLen) > len(rest) {
			return h, nil, fmt.Errorf("%w: client id of %d bytes", errShortHeader, idLen)
		}
		h.clientID = string(rest[:idLen])
		rest = rest[idLen:]
	}
	return h, rest, nil
}

// skipTags skips a tagged-fields section (KIP-482): a uvarint count, then
// per field a uvarint tag, a uvarint size and that many bytes.
func skipTags(b []byte) ([]byte, error) {
	count, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	for ; count > 0; count-- {
		if _, b, err = uvarint(b); err != nil {
			return nil, err
		}
		var size uint64
		if size, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if size > uint64(len(b)) {
			return nil, fmt.Errorf("%w: tagged field of %d bytes", errShortHeader, size)
		}
		b = b[size:]
	}
	return b, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > 1<<31 {
		return 0, nil, fmt.Errorf("%w: bad uvarint", errShortHeader)
	}
	return v, b[n:], nil
}

// appendResponseHeader starts a response frame: room for the length, the
// correlation id and, for flexible responses (header v1), an empty tagged
// fields section. ApiVersions responses always use header v0, so a client
// that does not yet know our versions can parse them.
func appendResponseHeader(dst []byte, corr int32, flexible bool) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if flexible {
		dst = append(dst, 0)
	}
	return dst
}

// finishFrame writes the length prefix of a frame started at dst[0].
func finishFrame(dst []byte) {
	binary.BigEndian.PutUint32(dst, uint32(len(dst)-4))
}
