package partition

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/engine"
	_ "github.com/minikafka/minikafka/engines/all"
)

// olderLayout writes a data directory of the layout before stores: the
// engine named in partitions/ENGINE, each partition's log an engine of its
// own in partitions/<key>/log, partition.meta naming no log. Partition i
// of topic t holds 4+i batches of 3 records, and its log starts at 3*i.
func olderLayout(t *testing.T, eng, dir string, id uuid.UUID, partitions int32) map[int32][]engine.Batch {
	root := filepath.Join(dir, partitionsDirName)
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, engine.WriteFileAtomic(vfs.Default, filepath.Join(root, engine.MarkerFile), []byte(eng+"\n")))
	want := map[int32][]engine.Batch{}
	for i := range partitions {
		pdir := filepath.Join(root, Key{id, i}.Dir())
		log, err := engine.Open(eng, filepath.Join(pdir, legacyLogDir), engine.Options{})
		require.NoError(t, err)
		for range 4 + i {
			b := batchtest.Plain(t, 3)
			batch.SetBaseOffset(b, log.EndOffset())
			eb := engine.Batch{BaseOffset: log.EndOffset(), Records: 3, Data: b}
			require.NoError(t, log.Append(eb))
			want[i] = append(want[i], eb)
		}
		require.NoError(t, log.DeleteBefore(3*int64(i)))
		if i > 0 {
			want[i] = want[i][i:]
		}
		require.NoError(t, log.Close())
		meta, err := encodeMeta(metaFile{Topic: "t", TopicID: id, Index: i})
		require.NoError(t, err)
		require.NoError(t, engine.WriteFileAtomic(vfs.Default, filepath.Join(pdir, metaFileName), meta))
	}
	return want
}

// holds checks that the manager's partitions of topic t hold want.
func holds(t *testing.T, m *Manager, want map[int32][]engine.Batch, what string) {
	require.Len(t, m.Keys(), len(want), what)
	for i, bs := range want {
		p, err := m.Partition("t", i)
		require.NoError(t, err, what)
		assert.Equal(t, 3*int64(i), p.StartOffset(), "%s: partition %d keeps its start", what, i)
		assert.Equal(t, bs[len(bs)-1].NextOffset(), p.EndOffset(), "%s: partition %d keeps its end", what, i)
		got, err := p.ReadLog(p.StartOffset(), 1<<20)
		require.NoError(t, err, what)
		require.Len(t, got, len(bs), "%s: partition %d keeps every batch", what, i)
		for j := range bs {
			assert.Equal(t, bs[j].Data, got[j].Data, "%s: partition %d batch %d", what, i, j)
		}
	}
}

func TestMigratesTheOlderLayout(t *testing.T) {
	for _, eng := range []string{"segment", "pebble", "badger"} {
		t.Run(eng, func(t *testing.T) {
			dir, id := t.TempDir(), uuid.New()
			want := olderLayout(t, eng, dir, id, 2)
			m, err := OpenManager(Config{Dir: dir, Engine: eng})
			require.NoError(t, err)
			holds(t, m, want, "migrated")
			assert.NoFileExists(t, filepath.Join(dir, partitionsDirName, engine.MarkerFile), "the older layout's marker goes once all is migrated")
			for i := range int32(2) {
				old := filepath.Join(dir, partitionsDirName, Key{id, i}.Dir(), legacyLogDir)
				require.Eventually(t, func() bool { _, err := os.Stat(old); return os.IsNotExist(err) }, 10*time.Second, 5*time.Millisecond,
					"partition %d's old log directory is gone", i)
			}
			require.NoError(t, m.Close())
			m, err = OpenManager(Config{Dir: dir, Engine: eng})
			require.NoError(t, err)
			defer m.Close()
			holds(t, m, want, "reopened after the migration")
		})
	}
}

func TestMigrationResumesAfterACrash(t *testing.T) {
	t.Run("a move cut short", func(t *testing.T) {
		// partition.meta names the reserved id; the log is still in place.
		dir, id := t.TempDir(), uuid.New()
		want := olderLayout(t, "segment", dir, id, 1)
		s, err := engine.OpenStore("segment", filepath.Join(dir, storeDirName), engine.Options{})
		require.NoError(t, err)
		logID, err := s.(engine.Adopter).Reserve()
		require.NoError(t, err)
		require.NoError(t, s.Close())
		meta, err := encodeMeta(metaFile{Topic: "t", TopicID: id, Index: 0, Log: logID.String()})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, partitionsDirName, Key{id, 0}.Dir(), metaFileName), meta, 0o644))

		m, err := OpenManager(Config{Dir: dir, Engine: "segment"})
		require.NoError(t, err)
		defer m.Close()
		holds(t, m, want, "the move finished")
		p, _ := m.Partition("t", 0)
		assert.Equal(t, logID, p.LogID())
	})
	t.Run("a copy cut short", func(t *testing.T) {
		// The store holds a log the copy began; partition.meta names none.
		dir, id := t.TempDir(), uuid.New()
		want := olderLayout(t, "pebble", dir, id, 1)
		s, err := engine.OpenStore("pebble", filepath.Join(dir, storeDirName), engine.Options{})
		require.NoError(t, err)
		half, log, err := s.Create(engine.LogOptions{})
		require.NoError(t, err)
		require.NoError(t, log.Append(want[0][0]))
		require.NoError(t, log.Close())
		require.NoError(t, s.Close())

		m, err := OpenManager(Config{Dir: dir, Engine: "pebble"})
		require.NoError(t, err)
		holds(t, m, want, "copied again")
		p, _ := m.Partition("t", 0)
		assert.NotEqual(t, half, p.LogID(), "a new copy")
		ids, err := m.store.Logs()
		require.NoError(t, err)
		assert.Equal(t, []engine.LogID{p.LogID()}, ids, "the half copy, a log no partition names, is deleted")
		require.NoError(t, m.Close())
	})
}

// createClosed makes topic t of n partitions on eng in dir and closes the
// manager.
func createClosed(t *testing.T, eng, dir string, n int32) (uuid.UUID, []engine.LogID) {
	m, err := OpenManager(Config{Dir: dir, Engine: eng})
	require.NoError(t, err)
	id := uuid.New()
	var logs []engine.LogID
	for i := range n {
		p, err := m.Ensure(Spec{Topic: "t", TopicID: id, Index: i})
		require.NoError(t, err)
		logs = append(logs, p.LogID())
	}
	require.NoError(t, m.Close())
	return id, logs
}

func TestStoreBadInput(t *testing.T) {
	t.Run("two partitions naming one log", func(t *testing.T) {
		dir := t.TempDir()
		id, logs := createClosed(t, "segment", dir, 2)
		meta, err := encodeMeta(metaFile{Topic: "t", TopicID: id, Index: 1, Log: logs[0].String()})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, partitionsDirName, Key{id, 1}.Dir(), metaFileName), meta, 0o644))
		_, err = OpenManager(Config{Dir: dir, Engine: "segment"})
		assert.ErrorContains(t, err, "both name log "+logs[0].String())
		assert.DirExists(t, filepath.Join(dir, storeDirName, logs[1].String()), "nothing is deleted on a guess")
	})
	t.Run("a partition whose log the store lacks", func(t *testing.T) {
		dir := t.TempDir()
		_, logs := createClosed(t, "segment", dir, 2)
		require.NoError(t, os.RemoveAll(filepath.Join(dir, storeDirName, logs[1].String())))
		_, err := OpenManager(Config{Dir: dir, Engine: "segment"})
		assert.ErrorIs(t, err, engine.ErrNoLog)
		assert.ErrorContains(t, err, "re-replicates it")
		assert.DirExists(t, filepath.Join(dir, storeDirName, logs[0].String()), "the other partition's log is untouched")
	})
	t.Run("a log no partition names", func(t *testing.T) {
		dir := t.TempDir()
		_, logs := createClosed(t, "pebble", dir, 1)
		s, err := engine.OpenStore("pebble", filepath.Join(dir, storeDirName), engine.Options{})
		require.NoError(t, err)
		_, log, err := s.Create(engine.LogOptions{})
		require.NoError(t, err)
		require.NoError(t, log.Close())
		require.NoError(t, s.Close())
		m, err := OpenManager(Config{Dir: dir, Engine: "pebble"})
		require.NoError(t, err)
		defer m.Close()
		ids, err := m.store.Logs()
		require.NoError(t, err)
		assert.Equal(t, logs, ids, "the orphan is deleted, the partition's log kept")
	})
	t.Run("an older layout of another engine", func(t *testing.T) {
		dir := t.TempDir()
		olderLayout(t, "segment", dir, uuid.New(), 1)
		_, err := OpenManager(Config{Dir: dir, Engine: "pebble"})
		assert.ErrorIs(t, err, engine.ErrWrongEngine)
	})
}
