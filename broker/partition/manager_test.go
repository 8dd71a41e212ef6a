package partition_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
	"github.com/minikafka/minikafka/engines/segment"
)

func str(s string) *string { return &s }

func TestCreateTopicValidation(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	_, err := m.CreateTopic("exists", 1, nil)
	require.NoError(t, err)
	cases := []struct {
		name    string
		topic   string
		parts   int32
		configs map[string]*string
		want    *kerr.Error
	}{
		{"legal characters", "a.B_c-9", 1, nil, nil},
		{"249 characters", strings.Repeat("x", 249), 1, nil, nil},
		{"250 characters", strings.Repeat("x", 250), 1, nil, kerr.InvalidTopicException},
		{"empty", "", 1, nil, kerr.InvalidTopicException},
		{"dot", ".", 1, nil, kerr.InvalidTopicException},
		{"dot dot", "..", 1, nil, kerr.InvalidTopicException},
		{"slash", "a/b", 1, nil, kerr.InvalidTopicException},
		{"space", "a b", 1, nil, kerr.InvalidTopicException},
		{"non-ascii", "tópico", 1, nil, kerr.InvalidTopicException},
		{"already exists", "exists", 1, nil, kerr.TopicAlreadyExists},
		{"collides with a.B_c-9", "a_B.c-9", 1, nil, kerr.InvalidTopicException},
		{"zero partitions", "z", 0, nil, kerr.InvalidPartitions},
		{"negative partitions", "z", -2, nil, kerr.InvalidPartitions},
		{"two billion partitions", "z", 2_000_000_000, nil, kerr.InvalidPartitions},
		{"default partitions", "d", -1, nil, nil},
		{"unknown config", "c1", 1, map[string]*string{"compression.type": str("zstd")}, kerr.InvalidConfig},
		{"compact", "c2", 1, map[string]*string{partition.ConfigCleanupPolicy: str("compact")}, kerr.InvalidConfig},
		{"LogAppendTime", "c3", 1, map[string]*string{partition.ConfigMessageTimestampType: str("LogAppendTime")}, kerr.InvalidConfig},
		{"retention not a number", "c4", 1, map[string]*string{partition.ConfigRetentionMs: str("week")}, kerr.InvalidConfig},
		{"retention below -1", "c5", 1, map[string]*string{partition.ConfigRetentionBytes: str("-2")}, kerr.InvalidConfig},
		{"min.insync.replicas 0", "c6", 1, map[string]*string{partition.ConfigMinInsyncReplicas: str("0")}, kerr.InvalidConfig},
		{"segment.bytes too small", "c7", 1, map[string]*string{partition.ConfigSegmentBytes: str("13")}, kerr.InvalidConfig},
		{"every accepted config", "c8", 2, map[string]*string{
			partition.ConfigCleanupPolicy: str("delete"), partition.ConfigRetentionMs: str("-1"),
			partition.ConfigRetentionBytes: str("1048576"), partition.ConfigSegmentBytes: str("1048576"),
			partition.ConfigMaxMessageBytes: str("2000000"), partition.ConfigMessageTimestampType: str("CreateTime"),
			partition.ConfigMinInsyncReplicas: str("1"),
		}, nil},
		{"nil value means default", "c9", 1, map[string]*string{partition.ConfigRetentionMs: nil}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, err := m.CreateTopic(c.topic, c.parts, c.configs)
			if c.want != nil {
				require.ErrorIs(t, err, c.want, "error %v", err)
				if c.want != kerr.TopicAlreadyExists {
					_, ok := m.Topic(c.topic)
					assert.False(t, ok, "a refused topic does not exist")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.topic, info.Name)
			got, ok := m.Topic(c.topic)
			require.True(t, ok)
			assert.Equal(t, info, got)
			for k, v := range c.configs {
				if v != nil {
					assert.Equal(t, *v, got.Configs[k])
				} else {
					assert.NotContains(t, got.Configs, k)
				}
			}
		})
	}
	d, _ := m.Topic("d")
	assert.Equal(t, int32(1), d.Partitions, "-1 is the default partition count")
}

func TestAllConfigs(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	info, err := m.CreateTopic("t", 1, map[string]*string{partition.ConfigRetentionMs: str("5")})
	require.NoError(t, err)
	all := info.AllConfigs()
	require.Len(t, all, len(partition.ConfigDefaults))
	for _, e := range all {
		if e.Name == partition.ConfigRetentionMs {
			assert.Equal(t, partition.ConfigEntry{Name: e.Name, Value: "5", Default: false}, e)
		} else {
			assert.Equal(t, partition.ConfigDefaults[e.Name], e.Value)
			assert.True(t, e.Default)
		}
	}
}

func TestMaxMessageBytesConfig(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	_, err := m.CreateTopic("big", 1, map[string]*string{partition.ConfigMaxMessageBytes: str("3000000")})
	require.NoError(t, err)
	_, err = m.CreateTopic("default", 1, nil)
	require.NoError(t, err)
	b := batchtest.Make(t, batchtest.Spec{Values: [][]byte{make([]byte, 2_000_000)}})
	big, _ := m.Partition("big", 0)
	_, err = big.Append(b)
	assert.NoError(t, err)
	def, _ := m.Partition("default", 0)
	_, err = def.Append(b)
	assert.ErrorIs(t, err, kerr.MessageTooLarge)
}

func TestCreatePartitions(t *testing.T) {
	dir := t.TempDir()
	m := open(t, memory.Name, dir, engine.Options{})
	_, err := m.CreateTopic("t", 2, nil)
	require.NoError(t, err)
	assert.ErrorIs(t, m.CreatePartitions("t", 2), kerr.InvalidPartitions)
	assert.ErrorIs(t, m.CreatePartitions("t", 1), kerr.InvalidPartitions)
	assert.ErrorIs(t, m.CreatePartitions("nope", 3), kerr.UnknownTopicOrPartition)
	p0, err := m.Partition("t", 0)
	require.NoError(t, err)
	require.NoError(t, m.CreatePartitions("t", 5))
	info, _ := m.Topic("t")
	assert.Equal(t, int32(5), info.Partitions)
	for i := int32(0); i < 5; i++ {
		p, err := m.Partition("t", i)
		require.NoError(t, err, "partition %d", i)
		_, err = p.Append(batchtest.Plain(t, 1))
		require.NoError(t, err)
	}
	again, _ := m.Partition("t", 0)
	assert.Same(t, p0, again, "existing partitions are kept")
	_, err = m.Partition("t", 5)
	assert.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
	_, err = m.Partition("t", -1)
	assert.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
	require.NoError(t, m.Close())

	m2 := open(t, memory.Name, dir, engine.Options{})
	info, _ = m2.Topic("t")
	assert.Equal(t, int32(5), info.Partitions, "the new count survives a restart")
}

func TestOpenRefuses(t *testing.T) {
	t.Run("damaged metadata", func(t *testing.T) {
		dir := t.TempDir()
		m := open(t, memory.Name, dir, engine.Options{})
		_, err := m.CreateTopic("t", 1, nil)
		require.NoError(t, err)
		require.NoError(t, m.Close())
		path := filepath.Join(dir, "topics.meta")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		b[len(b)-3] ^= 0x01
		require.NoError(t, os.WriteFile(path, b, 0o644))
		_, err = partition.OpenManager(partition.Config{Dir: dir, Engine: memory.Name})
		assert.ErrorIs(t, err, engine.ErrCorrupt)
	})
	t.Run("another engine's directory", func(t *testing.T) {
		dir := t.TempDir()
		m := open(t, memory.Name, dir, engine.Options{})
		require.NoError(t, m.Close())
		_, err := partition.OpenManager(partition.Config{Dir: dir, Engine: flakyName})
		assert.ErrorIs(t, err, engine.ErrWrongEngine)
	})
	t.Run("partitions without metadata", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "topics", "t-0", "log"), 0o755))
		_, err := partition.OpenManager(partition.Config{Dir: dir, Engine: memory.Name})
		assert.ErrorIs(t, err, engine.ErrCorrupt)
		assert.DirExists(t, filepath.Join(dir, "topics", "t-0"), "nothing is deleted on a guess")
	})
	t.Run("unknown engine", func(t *testing.T) {
		_, err := partition.OpenManager(partition.Config{Dir: t.TempDir(), Engine: "nope"})
		assert.ErrorIs(t, err, engine.ErrUnknownEngine)
	})
}

func TestOpenRemovesOrphans(t *testing.T) {
	dir := t.TempDir()
	m := open(t, memory.Name, dir, engine.Options{})
	_, err := m.CreateTopic("t", 1, nil)
	require.NoError(t, err)
	require.NoError(t, m.Close())
	for _, orphan := range []string{"gone-0", "t-1", "t-0.deleting"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "topics", orphan, "log"), 0o755))
	}
	m2 := open(t, memory.Name, dir, engine.Options{})
	entries, err := os.ReadDir(filepath.Join(dir, "topics"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"t-0"}, names)
	info, _ := m2.Topic("t")
	assert.Equal(t, int32(1), info.Partitions)
}

func TestClosedManager(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	require.NoError(t, m.Close())
	_, err := m.CreateTopic("t", 1, nil)
	assert.ErrorIs(t, err, engine.ErrClosed)
	assert.ErrorIs(t, m.DeleteTopic("t"), engine.ErrClosed)
	assert.ErrorIs(t, m.CreatePartitions("t", 2), engine.ErrClosed)
	_, _, err = m.InitProducerID()
	assert.ErrorIs(t, err, engine.ErrClosed)
}

// TestManagerLocksItsDirectory: a second manager on an open directory is
// refused with ErrDirLocked and opens nothing; after Close it opens.
func TestManagerLocksItsDirectory(t *testing.T) {
	dir := t.TempDir()
	m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: segment.Name})
	require.NoError(t, err)
	_, err = m.CreateTopic("t", 1, nil)
	require.NoError(t, err)

	_, err = partition.OpenManager(partition.Config{Dir: dir, Engine: segment.Name})
	require.ErrorIs(t, err, partition.ErrDirLocked)

	require.NoError(t, m.Close())
	m2 := open(t, segment.Name, dir, engine.Options{})
	_, err = m2.Partition("t", 0)
	assert.NoError(t, err, "the first manager's topic is there")
}
