package partition

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/minikafka/minikafka/engine"
)

// restoreWorkers is how many partitions Open reads and opens at once, and
// closeWorkers how many Close closes at once: a partition that took records
// since it opened syncs its log and writes its snapshot, and a disk serves
// fsyncs side by side better than one by one.
const (
	restoreWorkers = 16
	closeWorkers   = 32
)

// found is one directory of Dir/partitions as the open finds it.
type found struct {
	name   string
	meta   metaFile
	log    engine.LogID
	legacy bool // its log is the older layout's, in its own directory: to migrate
}

func (m *Manager) open() error {
	fs, dir := m.fs, m.cfg.Dir
	root := fs.PathJoin(dir, partitionsDirName)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("partition: create %s: %w", dir, err)
	}
	lock, err := fs.Lock(fs.PathJoin(dir, lockFileName))
	if err != nil {
		return fmt.Errorf("partition: lock %s: %w (%v)", dir, ErrDirLocked, err)
	}
	m.lock = lock
	if err := syncDirs(fs, fs.PathDir(dir), dir); err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	if _, err := fs.Stat(fs.PathJoin(dir, legacyMetaFile)); err == nil {
		return fmt.Errorf("partition: %s holds data of an older mini-kafka (%s, topics by name, before topics came from the cluster metadata); start with an empty -dir: %w",
			dir, legacyMetaFile, engine.ErrWrongEngine)
	}
	legacy, err := m.legacyLayout(root)
	if err != nil {
		return err
	}
	if err := m.openStore(); err != nil {
		return err
	}
	m.savedHWs = m.loadHWs()
	if err := fs.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("partition: create %s: %w", root, err)
	}
	if err := engine.SyncDir(fs, dir); err != nil { // root's entry, if just created
		return fmt.Errorf("partition: %w", err)
	}
	names, err := fs.List(root)
	if err != nil {
		return fmt.Errorf("partition: list %s: %w", root, err)
	}
	slices.Sort(names)
	names = slices.DeleteFunc(names, func(n string) bool { return n == engine.MarkerFile })
	finds, err := m.survey(root, names)
	if err != nil {
		return err
	}
	if err := m.restoreAll(finds); err != nil {
		return err
	}
	if legacy {
		if err := m.endLegacyLayout(root); err != nil {
			return err
		}
	}
	if err := m.sweepStore(); err != nil {
		return err
	}
	m.cfg.Logger.Info("partitions restored", "dir", dir, "engine", m.cfg.Engine, "partitions", len(m.parts))
	return nil
}

// survey reads the partition.meta of every directory in root (side by
// side: a broker holds thousands), removes the orphans and refuses two
// partitions that name the same log.
func (m *Manager) survey(root string, names []string) ([]found, error) {
	finds := make([]*found, len(names))
	errs := m.forEach(len(names), func(i int) (err error) {
		finds[i], err = m.inspect(root, names[i])
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []found
	owner := map[engine.LogID]string{}
	for _, f := range finds {
		if f == nil {
			continue
		}
		if !f.legacy {
			if other, dup := owner[f.log]; dup {
				return nil, fmt.Errorf("partition: %s and %s both name log %s of the store in %s: a directory copied by hand? Remove the one that does not belong (its partition is re-replicated)",
					other, f.name, f.log, m.storeDir())
			}
			owner[f.log] = f.name
		}
		out = append(out, *f)
	}
	return out, nil
}

// inspect reads the partition directory root/name, or removes it when it
// is an orphan (a deletion, or a creation, that a crash interrupted) and
// returns nil.
func (m *Manager) inspect(root, name string) (*found, error) {
	dir := m.fs.PathJoin(root, name)
	meta, ok, err := readMeta(m.fs, dir)
	if err != nil {
		return nil, fmt.Errorf("partition %s: %w", name, err)
	}
	if !ok || strings.HasSuffix(name, deletingSuffix) || name != dirName(meta.TopicID, meta.Index) {
		m.cfg.Logger.Info("removing orphaned partition directory", "dir", name)
		if !strings.HasSuffix(name, deletingSuffix) {
			aside, err := m.setAside(dir)
			if err != nil {
				return nil, fmt.Errorf("partition: remove orphan %s: %w", name, err)
			}
			if err := engine.SyncDir(m.fs, root); err != nil {
				return nil, err
			}
			dir = aside
		}
		m.deleter.remove(dir) // its log, if any, goes with the store's sweep
		return nil, nil
	}
	f := &found{name: name, meta: meta}
	if meta.Log == "" {
		f.legacy = true
		return f, nil
	}
	if f.log, err = engine.ParseLogID(meta.Log); err != nil {
		return nil, fmt.Errorf("partition %s: %s: %w: %w", name, metaFileName, err, engine.ErrCorrupt)
	}
	return f, nil
}

// restoreAll opens the partitions found, side by side (one by one in
// Manual mode, whose caller wants a deterministic order): a broker with
// thousands of partitions opens each log, reads its checkpoints and
// recovers its tail, mostly waiting for the disk.
func (m *Manager) restoreAll(finds []found) error {
	opened := make([]*Partition, len(finds))
	errs := m.forEach(len(finds), func(i int) (err error) {
		opened[i], err = m.restore(finds[i])
		return err
	})
	if err := errors.Join(errs...); err != nil {
		for _, p := range opened {
			if p != nil {
				_ = p.close()
			}
		}
		return err
	}
	for _, p := range opened {
		m.parts[p.key] = p
		m.names[p.topic] = p.key.TopicID
	}
	return nil
}

// forEach runs job(0..n-1) on restoreWorkers goroutines (the caller's
// alone in Manual mode) and returns each job's error.
func (m *Manager) forEach(n int, job func(i int) error) []error {
	errs := make([]error, n)
	if m.cfg.Manual {
		for i := range n {
			errs[i] = job(i)
		}
		return errs
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(restoreWorkers, n) {
		wg.Go(func() {
			for i := range jobs {
				errs[i] = job(i)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return errs
}

// restore opens the partition f found, its log through the store,
// migrating a log of the older layout into the store first.
func (m *Manager) restore(f found) (*Partition, error) {
	spec := Spec{Topic: f.meta.Topic, TopicID: f.meta.TopicID, Index: f.meta.Index}
	dir := m.partitionDir(spec.Key())
	id := f.log
	if f.legacy {
		var err error
		if id, err = m.migrate(dir, f.meta); err != nil {
			return nil, fmt.Errorf("partition %s-%d: migrate its log into the store: %w", spec.Topic, spec.Index, err)
		}
	}
	log, err := m.store.Open(id, engine.LogOptions{})
	if errors.Is(err, engine.ErrNoLog) {
		log, err = m.resumeAdoption(dir, id)
	}
	if err != nil {
		return nil, fmt.Errorf("partition %s-%d: open log %s of the %s store: %w", spec.Topic, spec.Index, id, m.cfg.Engine, err)
	}
	names, err := m.fs.List(dir)
	if err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("partition %s-%d: list %s: %w", spec.Topic, spec.Index, dir, err)
	}
	if slices.Contains(names, legacyLogDir) {
		// A copy into the store finished; the original is left over.
		m.deleter.remove(m.fs.PathJoin(dir, legacyLogDir))
	}
	return openPartition(m, spec, id, log, names)
}

// sweepStore deletes the store's logs no partition names: those of
// partitions whose creation or removal a crash cut short.
func (m *Manager) sweepStore() error {
	ids, err := m.store.Logs()
	if err != nil {
		return fmt.Errorf("partition: list the store's logs: %w", err)
	}
	named := make(map[engine.LogID]bool, len(m.parts))
	for _, p := range m.parts {
		named[p.logID] = true
	}
	for _, id := range ids {
		if named[id] {
			continue
		}
		m.cfg.Logger.Info("deleting a log no partition names", "log", id.String())
		if err := m.store.Delete(id); err != nil {
			return fmt.Errorf("partition: delete orphaned log %s: %w", id, err)
		}
	}
	return nil
}
