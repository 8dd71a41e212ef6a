package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// File names under NodeConfig.Dir; see the package documentation.
const (
	metaFile      = "META"
	hardStateFile = "HARDSTATE"
	snapshotFile  = "SNAPSHOT"
	logDir        = "log"
)

// Magic numbers of the checksummed files. Format constants never change.
const (
	metaMagic      = "MKQM"
	hardStateMagic = "MKQH"
	snapshotMagic  = "MKQS"
	fileVersion    = 1
	fileHeaderLen  = 12 // magic, version, length
	fileTrailerLen = 4  // CRC
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt: a quorum file fails its checksum or framing, or the files
// contradict each other. The node cannot start; an operator must repair or
// replace its directory (a controller with an empty directory rejoins by
// snapshot only if the others still form a quorum).
var ErrCorrupt = errors.New("quorum: corrupt raft state")

// encodeFile frames payload as a checksummed file.
func encodeFile(magic string, payload []byte) []byte {
	b := make([]byte, 0, fileHeaderLen+len(payload)+fileTrailerLen)
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint32(b, fileVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeFile checks a checksummed file and returns its payload.
func decodeFile(magic string, b []byte) ([]byte, error) {
	if len(b) < fileHeaderLen+fileTrailerLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(b))
	}
	if string(b[:4]) != magic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrCorrupt, b[:4], magic)
	}
	if v := binary.BigEndian.Uint32(b[4:8]); v != fileVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCorrupt, v, fileVersion)
	}
	n := binary.BigEndian.Uint32(b[8:12])
	if uint64(len(b)) != fileHeaderLen+uint64(n)+fileTrailerLen {
		return nil, fmt.Errorf("%w: length %d does not match the file's %d bytes", ErrCorrupt, n, len(b))
	}
	body := b[:len(b)-fileTrailerLen]
	if got, want := crc32.Checksum(body, castagnoli), binary.BigEndian.Uint32(b[len(body):]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	return body[fileHeaderLen:], nil
}

// writeFile replaces path atomically with payload framed under magic.
func writeFile(fs vfs.FS, path, magic string, payload []byte) error {
	if err := engine.WriteFileAtomic(fs, path, encodeFile(magic, payload)); err != nil {
		return fmt.Errorf("quorum: write %s: %w", path, err)
	}
	return nil
}

// readFile returns the payload of the checksummed file at path, and false
// with no error if there is no such file.
func readFile(fs vfs.FS, path, magic string) ([]byte, bool, error) {
	f, err := fs.Open(path)
	if oserror.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("quorum: open %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, false, fmt.Errorf("quorum: read %s: %w", path, err)
	}
	payload, err := decodeFile(magic, b)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return payload, true, nil
}
