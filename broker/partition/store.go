package partition

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cockroachdb/errors/oserror"

	"github.com/minikafka/minikafka/engine"
)

// Every partition's log is a log of the data directory's one store
// (engine.Store, in Dir/store), named in its partition.meta by the id the
// store gave it. Data directories of the older layout, where each
// partition's log was an engine of its own in Dir/partitions/<key>/log
// (Dir/partitions/ENGINE naming the engine), are migrated on open, one
// partition at a time, so that a crash during the migration leaves each
// partition either as it was or migrated:
//
//   - a store that can take a log's directory in as it is
//     (engine.Adopter: segment's, a directory of logs) gets it by a
//     rename, after partition.meta names the id it reserved for it (an
//     open that finds the id missing from the store and the directory
//     still in place finishes the rename);
//   - any other store (pebble's, badger's: one database) gets a copy,
//     read with the engine's own Open: a new log of the store takes the
//     old one's start and every batch, synced, before partition.meta names
//     it; the old directory is deleted afterwards (an open that finds it
//     beside a partition whose log is in the store deletes it; a copy a
//     crash cut short is a log no partition names, which the sweep
//     deletes). The copy costs the time and, until the old files are
//     deleted, the space of the data.
//
// Once every partition is migrated, Dir/partitions/ENGINE is removed.
const (
	storeDirName = "store"
	legacyLogDir = "log"
	// migrateReadBytes is how much one read of a copied log asks for.
	migrateReadBytes = 4 << 20
)

func (m *Manager) storeDir() string { return m.fs.PathJoin(m.cfg.Dir, storeDirName) }

// openStore opens the data directory's store; the engine's notices and
// the deleter's pacing come with the options.
func (m *Manager) openStore() error {
	s, err := engine.OpenStore(m.cfg.Engine, m.storeDir(), m.cfg.EngineOptions)
	if err != nil {
		return fmt.Errorf("partition: open the %s store in %s: %w", m.cfg.Engine, m.storeDir(), err)
	}
	m.store = s
	return nil
}

// legacyLayout reports whether root holds partitions of the older layout
// (root/ENGINE names their engine), and refuses another engine's.
func (m *Manager) legacyLayout(root string) (bool, error) {
	b, ok, err := engine.ReadFileIfExists(m.fs, m.fs.PathJoin(root, engine.MarkerFile))
	switch {
	case err != nil:
		return false, fmt.Errorf("partition: %w", err)
	case !ok:
		return false, nil
	}
	if owner := string(bytes.TrimSpace(b)); owner != m.cfg.Engine {
		return false, fmt.Errorf("partition: %w: %s was written by engine %q, not %q", engine.ErrWrongEngine, root, owner, m.cfg.Engine)
	}
	m.cfg.Logger.Info("data directory of the older layout (a log per partition directory): migrating every partition's log into the store", "dir", m.cfg.Dir, "engine", m.cfg.Engine)
	return true, nil
}

// endLegacyLayout removes the older layout's marker once every partition
// is migrated.
func (m *Manager) endLegacyLayout(root string) error {
	if err := m.fs.Remove(m.fs.PathJoin(root, engine.MarkerFile)); err != nil && !oserror.IsNotExist(err) {
		return fmt.Errorf("partition: %w", err)
	}
	return engine.SyncDir(m.fs, root)
}

func (m *Manager) hasLegacyLog(dir string) bool {
	st, err := m.fs.Stat(m.fs.PathJoin(dir, legacyLogDir))
	return err == nil && st.IsDir()
}

// migrate moves or copies the older layout's log in dir into the store
// and names it in partition.meta; it returns the log's id.
func (m *Manager) migrate(dir string, meta metaFile) (engine.LogID, error) {
	if !m.hasLegacyLog(dir) {
		return 0, fmt.Errorf("%s names no log and holds none (%s/): %w", metaFileName, legacyLogDir, engine.ErrCorrupt)
	}
	if a, ok := m.store.(engine.Adopter); ok {
		id, err := a.Reserve()
		if err == nil {
			err = m.nameLog(dir, meta, id)
		}
		if err == nil {
			err = a.Adopt(id, m.fs.PathJoin(dir, legacyLogDir))
		}
		m.cfg.Logger.Info("moved a partition's log into the store", "dir", dir, "log", id.String(), "err", err)
		return id, err
	}
	old, err := engine.Open(m.cfg.Engine, m.fs.PathJoin(dir, legacyLogDir), m.cfg.EngineOptions)
	if err != nil {
		return 0, err
	}
	defer old.Close()
	id, log, err := m.store.Create(engine.LogOptions{})
	if err != nil {
		return 0, err
	}
	err = copyLog(log, old)
	if cerr := log.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = m.nameLog(dir, meta, id)
	}
	if err != nil {
		return 0, err // the copy is a log no partition names: the sweep deletes it
	}
	m.cfg.Logger.Info("copied a partition's log into the store", "dir", dir, "log", id.String(),
		"start", old.StartOffset(), "end", old.EndOffset())
	m.deleter.remove(m.fs.PathJoin(dir, legacyLogDir))
	return id, nil
}

// nameLog writes dir's partition.meta naming log id.
func (m *Manager) nameLog(dir string, meta metaFile, id engine.LogID) error {
	meta.Log = id.String()
	b, err := encodeMeta(meta)
	if err != nil {
		return err
	}
	return engine.WriteFileAtomic(m.fs, m.fs.PathJoin(dir, metaFileName), b)
}

// copyLog makes the empty log to hold what from holds, durably: its start
// and every batch.
func copyLog(to, from engine.LogEngine) error {
	start, end := from.StartOffset(), from.EndOffset()
	if start > 0 {
		if err := to.DeleteBefore(start); err != nil {
			return err
		}
	}
	for off := start; off < end; {
		bs, err := from.Read(off, migrateReadBytes)
		if err != nil {
			return fmt.Errorf("read %d: %w", off, err)
		}
		if len(bs) == 0 {
			return fmt.Errorf("read %d below the end %d returned nothing: %w", off, end, engine.ErrCorrupt)
		}
		for _, b := range bs {
			if err := to.Append(b); err != nil {
				return fmt.Errorf("append %d: %w", b.BaseOffset, err)
			}
		}
		off = bs[len(bs)-1].NextOffset()
	}
	return to.Sync(context.Background(), end)
}

// resumeAdoption finishes a move into the store that a crash cut short:
// partition.meta names log id, the store has none, and the log's
// directory is still in dir. Otherwise the log is lost, which is said.
func (m *Manager) resumeAdoption(dir string, id engine.LogID) (engine.LogEngine, error) {
	a, ok := m.store.(engine.Adopter)
	if !ok || !m.hasLegacyLog(dir) {
		return nil, fmt.Errorf("%w: %s names log %s, which the store in %s does not hold (the store was replaced or damaged?); remove the partition's directory %s and the cluster re-replicates it",
			engine.ErrNoLog, metaFileName, id, m.storeDir(), dir)
	}
	if err := a.Adopt(id, m.fs.PathJoin(dir, legacyLogDir)); err != nil {
		return nil, err
	}
	m.cfg.Logger.Info("moved a partition's log into the store", "dir", dir, "log", id.String())
	return m.store.Open(id, engine.LogOptions{})
}
