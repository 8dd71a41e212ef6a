package partition

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// The topic metadata file, Dir/topics.meta, is one header line and a JSON
// body (readable by an operator, checked by the header):
//
//	mini-kafka topics v1 crc32c=<8 hex digits of CRC-32C of the body>\n
//	{"engine":"segment","topics":[{"name":"t","id":"<32 hex>","partitions":3,"configs":{...}}]}
//
// It is replaced atomically (engine.WriteFileAtomic) on every change, and
// it is the truth: a partition directory it does not list is an orphan.
const (
	metaFileName = "topics.meta"
	metaHeader   = "mini-kafka topics v1 crc32c="
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type metaFile struct {
	Engine string      `json:"engine"`
	Topics []metaTopic `json:"topics"`
}

type metaTopic struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

func encodeMeta(engineName string, topics []TopicInfo) ([]byte, error) {
	mf := metaFile{Engine: engineName, Topics: make([]metaTopic, 0, len(topics))}
	for _, t := range topics {
		mf.Topics = append(mf.Topics, metaTopic{Name: t.Name, ID: hex.EncodeToString(t.ID[:]), Partitions: t.Partitions, Configs: t.Configs})
	}
	body, err := json.Marshal(mf)
	if err != nil {
		return nil, fmt.Errorf("encode topic metadata: %w", err)
	}
	out := fmt.Appendf(nil, "%s%08x\n", metaHeader, crc32.Checksum(body, castagnoli))
	return append(out, body...), nil
}

// decodeMeta parses and checks the metadata file. Damage is engine.ErrCorrupt:
// the broker refuses to start rather than guess which topics exist.
func decodeMeta(b []byte) (string, []TopicInfo, error) {
	bad := func(format string, args ...any) (string, []TopicInfo, error) {
		return "", nil, fmt.Errorf("%s: %s: %w", metaFileName, fmt.Sprintf(format, args...), engine.ErrCorrupt)
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
	var mf metaFile
	if err := json.Unmarshal(body, &mf); err != nil {
		return bad("%v", err)
	}
	out := make([]TopicInfo, 0, len(mf.Topics))
	seen := map[string]bool{}
	for _, t := range mf.Topics {
		info := TopicInfo{Name: t.Name, Partitions: t.Partitions, Configs: t.Configs, Internal: internalTopics[t.Name]}
		id, err := hex.DecodeString(t.ID)
		if err != nil || len(id) != len(info.ID) {
			return bad("topic %q: id %q", t.Name, t.ID)
		}
		copy(info.ID[:], id)
		if err := validTopicName(t.Name); err != nil || seen[t.Name] || t.Partitions < 1 {
			return bad("topic %q with %d partitions", t.Name, t.Partitions)
		}
		seen[t.Name] = true
		if info.Configs == nil {
			info.Configs = map[string]string{}
		}
		in := map[string]*string{}
		for k, v := range info.Configs {
			in[k] = &v
		}
		if _, err := validateConfigs(in); err != nil {
			return bad("topic %q: %v", t.Name, err)
		}
		out = append(out, info)
	}
	return mf.Engine, out, nil
}

func readMeta(fs vfs.FS, path string) (engineName string, topics []TopicInfo, found bool, err error) {
	f, err := fs.Open(path)
	if oserror.IsNotExist(err) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return "", nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	engineName, topics, err = decodeMeta(b)
	return engineName, topics, true, err
}
