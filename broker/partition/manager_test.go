package partition_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
	"github.com/minikafka/minikafka/engines/segment"
)

func TestMaxMessageBytesConfig(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	createTopic(t, m, "big", 1, map[string]string{cluster.ConfigMaxMessageBytes: "3000000"})
	defID := createTopic(t, m, "default", 1, nil)
	b := batchtest.Make(t, batchtest.Spec{Values: [][]byte{make([]byte, 2_000_000)}})
	big, _ := m.Partition("big", 0)
	_, err := big.Append(b)
	assert.NoError(t, err)
	def, _ := m.Partition("default", 0)
	_, err = def.Append(b)
	assert.ErrorIs(t, err, kerr.MessageTooLarge)

	// A config the metadata changes applies to the open partition.
	_, err = m.Ensure(partition.Spec{Topic: "default", TopicID: defID, Configs: map[string]string{cluster.ConfigMaxMessageBytes: "3000000"}})
	require.NoError(t, err)
	_, err = def.Append(b)
	assert.NoError(t, err)
}

func TestEnsureGrowsATopicAndKeepsItsPartitions(t *testing.T) {
	dir := t.TempDir()
	m := open(t, segment.Name, dir, engine.Options{})
	id := createTopic(t, m, "t", 2, nil)
	p0, err := m.Partition("t", 0)
	require.NoError(t, err)
	for i := int32(0); i < 5; i++ {
		_, err := m.Ensure(partition.Spec{Topic: "t", TopicID: id, Index: i})
		require.NoError(t, err)
	}
	lead(t, m, "t", 5)
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

	m2 := open(t, segment.Name, dir, engine.Options{})
	assert.Len(t, m2.Keys(), 5, "the partitions survive a restart")
	p, err := m2.Partition("t", 4)
	require.NoError(t, err)
	assert.Equal(t, int64(1), p.EndOffset())
	assert.Equal(t, partition.Key{TopicID: id, Index: 4}, p.Key())
	assert.False(t, p.Role().Local, "a reopened partition leads only once the metadata says so")
}

// TestRecreatedTopicIsANewDirectory: a topic removed and created again
// under the same name has a new id, so none of the old data is taken for
// the new topic's, across a restart too.
func TestRecreatedTopicIsANewDirectory(t *testing.T) {
	dir := t.TempDir()
	m := open(t, segment.Name, dir, engine.Options{})
	old := createTopic(t, m, "t", 1, nil)
	p, _ := m.Partition("t", 0)
	fill(t, p, 3)
	removeTopic(t, m, old, 1)
	_, err := m.Partition("t", 0)
	assert.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
	fresh := createTopicID(t, m, uuid.New(), "t", 1, nil)
	p, _ = m.Partition("t", 0)
	assert.Zero(t, p.EndOffset(), "the new topic starts empty")
	require.NoError(t, m.Close())

	m2 := open(t, segment.Name, dir, engine.Options{})
	assert.Equal(t, []partition.Key{{TopicID: fresh, Index: 0}}, m2.Keys())
}

func TestOpenRefuses(t *testing.T) {
	t.Run("damaged partition.meta", func(t *testing.T) {
		dir := t.TempDir()
		m := open(t, memory.Name, dir, engine.Options{})
		id := createTopic(t, m, "t", 1, nil)
		require.NoError(t, m.Close())
		path := filepath.Join(partitionDir(dir, id, 0), "partition.meta")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		b[len(b)-3] ^= 0x01
		require.NoError(t, os.WriteFile(path, b, 0o644))
		_, err = partition.OpenManager(partition.Config{Dir: dir, Engine: memory.Name})
		assert.ErrorIs(t, err, engine.ErrCorrupt)
		assert.DirExists(t, partitionDir(dir, id, 0), "nothing is deleted on a guess")
	})
	t.Run("another engine's directory", func(t *testing.T) {
		dir := t.TempDir()
		m := open(t, memory.Name, dir, engine.Options{})
		require.NoError(t, m.Close())
		_, err := partition.OpenManager(partition.Config{Dir: dir, Engine: flakyName})
		assert.ErrorIs(t, err, engine.ErrWrongEngine)
	})
	t.Run("a directory of an older mini-kafka", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "topics.meta"), []byte("mini-kafka topics v1"), 0o644))
		_, err := partition.OpenManager(partition.Config{Dir: dir, Engine: memory.Name})
		assert.ErrorContains(t, err, "older mini-kafka")
	})
	t.Run("unknown engine", func(t *testing.T) {
		_, err := partition.OpenManager(partition.Config{Dir: t.TempDir(), Engine: "nope"})
		assert.ErrorIs(t, err, engine.ErrUnknownEngine)
	})
}

// nothingLeft says whether Dir/partitions holds nothing and the store no
// log's directory, kept or being deleted (a DirStore's, 16 hex digits).
func nothingLeft(t *testing.T, dir string) bool {
	entries, err := os.ReadDir(filepath.Join(dir, "partitions"))
	require.NoError(t, err)
	if len(entries) > 0 {
		return false
	}
	entries, err = os.ReadDir(filepath.Join(dir, "store"))
	require.NoError(t, err)
	for _, e := range entries {
		if name, _ := strings.CutSuffix(e.Name(), ".deleting"); len(name) == 16 {
			return false
		}
	}
	return true
}

// A Close in the middle of a paced deletion stops it; the directory, set
// aside under its .deleting name, is deleted by the next open.
func TestCloseStopsADeletionTheNextOpenFinishes(t *testing.T) {
	dir := t.TempDir()
	m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: segment.Name, DeleteRate: 1}) // a byte a second
	require.NoError(t, err)
	id := createTopic(t, m, "t", 1, nil)
	p, _ := m.Partition("t", 0)
	fill(t, p, 3)
	removeTopic(t, m, id, 1)
	closed := make(chan error)
	go func() { closed <- m.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for the deletion")
	}
	assert.False(t, nothingLeft(t, dir), "the deletion was cut short")

	m2 := open(t, segment.Name, dir, engine.Options{})
	require.Eventually(t, func() bool { return nothingLeft(t, dir) }, 10*time.Second, 5*time.Millisecond)
	assert.Empty(t, m2.Keys())
}

func partitionDir(dir string, id uuid.UUID, index int32) string {
	return filepath.Join(dir, "partitions", partition.Key{TopicID: id, Index: index}.Dir())
}

func TestOpenRemovesOrphans(t *testing.T) {
	dir := t.TempDir()
	m := open(t, memory.Name, dir, engine.Options{})
	id := createTopic(t, m, "t", 1, nil)
	require.NoError(t, m.Close())
	keep := filepath.Base(partitionDir(dir, id, 0))
	// A creation cut short (no partition.meta), a deletion cut short, and a
	// directory whose meta names another partition.
	for _, orphan := range []string{"00-0", keep + ".deleting"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "partitions", orphan, "log"), 0o755))
	}
	copied := filepath.Join(dir, "partitions", "01-1")
	require.NoError(t, os.MkdirAll(copied, 0o755))
	meta, err := os.ReadFile(filepath.Join(partitionDir(dir, id, 0), "partition.meta"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(copied, "partition.meta"), meta, 0o644))

	m2 := open(t, memory.Name, dir, engine.Options{})
	assert.Len(t, m2.Keys(), 1)
	names := func() []string {
		entries, err := os.ReadDir(filepath.Join(dir, "partitions"))
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	want := []string{keep}
	require.Eventually(t, func() bool { return slices.Equal(want, names()) }, 10*time.Second, 5*time.Millisecond,
		"the orphans deleted in the background")
}

func TestClosedManager(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	require.NoError(t, m.Close())
	_, err := m.Ensure(partition.Spec{Topic: "t", TopicID: uuid.New()})
	assert.ErrorIs(t, err, engine.ErrClosed)
	assert.ErrorIs(t, m.Remove(partition.Key{TopicID: uuid.New()}), engine.ErrClosed)
	assert.ErrorIs(t, m.Close(), engine.ErrClosed)
}

// TestManagerLocksItsDirectory: a second manager on an open directory is
// refused with ErrDirLocked and opens nothing; after Close it opens.
func TestManagerLocksItsDirectory(t *testing.T) {
	dir := t.TempDir()
	m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: segment.Name})
	require.NoError(t, err)
	createTopic(t, m, "t", 1, nil)

	_, err = partition.OpenManager(partition.Config{Dir: dir, Engine: segment.Name})
	require.ErrorIs(t, err, partition.ErrDirLocked)

	require.NoError(t, m.Close())
	m2 := open(t, segment.Name, dir, engine.Options{})
	_, err = m2.Partition("t", 0)
	assert.NoError(t, err, "the first manager's partition is there")
}

// Ensures run side by side (the reconciler opens partitions concurrently):
// each key is created once, whoever asks, and every partition survives a
// restart.
func TestConcurrentEnsure(t *testing.T) {
	dir := t.TempDir()
	m := open(t, segment.Name, dir, engine.Options{})
	id := uuid.New()
	const parts, callers = 8, 4
	got := make([][parts]*partition.Partition, callers)
	var wg sync.WaitGroup
	for c := range callers {
		for i := range int32(parts) {
			wg.Go(func() {
				p, err := m.Ensure(partition.Spec{Topic: "t", TopicID: id, Index: i})
				assert.NoError(t, err)
				got[c][i] = p
			})
		}
	}
	wg.Wait()
	for i := range parts {
		for c := 1; c < callers; c++ {
			assert.Same(t, got[0][i], got[c][i], "partition %d is created once", i)
		}
	}
	assert.Len(t, m.Keys(), parts)
	require.NoError(t, m.Close())
	assert.Len(t, open(t, segment.Name, dir, engine.Options{}).Keys(), parts)
}
