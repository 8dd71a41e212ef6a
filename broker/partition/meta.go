package partition

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"

	"github.com/minikafka/minikafka/engine"
)

// Each partition directory holds partition.meta, which says whose it is: one
// header line and a JSON body, checked by the header's CRC-32C:
//
//	mini-kafka partition v1 crc32c=<8 hex digits>\n
//	{"topic":"t","topicId":"<uuid>","index":0,"log":"<16 hex digits>"}
//
// log is the partition's log in the data directory's store (its
// engine.LogID); a partition.meta of the older layout has none, its log
// being in the partition's directory (store.go migrates it). It takes its
// place last when a partition is created, so a partition directory without
// one is an orphan of a creation a crash cut short, removed on open.
const (
	metaFileName = "partition.meta"
	metaHeader   = "mini-kafka partition v1 crc32c="
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type metaFile struct {
	Topic   string    `json:"topic"`
	TopicID uuid.UUID `json:"topicId"`
	Index   int32     `json:"index"`
	Log     string    `json:"log,omitempty"`
}

func encodeMeta(m metaFile) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", metaFileName, err)
	}
	out := fmt.Appendf(nil, "%s%08x\n", metaHeader, crc32.Checksum(body, castagnoli))
	return append(out, body...), nil
}

// decodeMeta parses and checks a partition.meta; damage is engine.ErrCorrupt.
func decodeMeta(b []byte) (metaFile, error) {
	bad := func(format string, args ...any) (metaFile, error) {
		return metaFile{}, fmt.Errorf("%s: %s: %w", metaFileName, fmt.Sprintf(format, args...), engine.ErrCorrupt)
	}
	line, body, ok := bytes.Cut(b, []byte("\n"))
	if !ok || !bytes.HasPrefix(line, []byte(metaHeader)) {
		return bad("no %q header", metaHeader)
	}
	var want uint32
	if _, err := fmt.Sscanf(string(line[len(metaHeader):]), "%08x", &want); err != nil {
		return bad("header %q", line)
	}
	if got := crc32.Checksum(body, castagnoli); got != want {
		return bad("crc %08x, computed %08x", want, got)
	}
	var m metaFile
	if err := json.Unmarshal(body, &m); err != nil {
		return bad("%v", err)
	}
	if m.TopicID == uuid.Nil || m.Index < 0 || m.Topic == "" {
		return bad("topic %q id %s index %d", m.Topic, m.TopicID, m.Index)
	}
	return m, nil
}

// readMeta reads dir's partition.meta; found is false when there is none.
func readMeta(fs vfs.FS, dir string) (m metaFile, found bool, err error) {
	b, found, err := engine.ReadFileIfExists(fs, fs.PathJoin(dir, metaFileName))
	if !found || err != nil {
		return metaFile{}, false, err
	}
	m, err = decodeMeta(b)
	return m, true, err
}
