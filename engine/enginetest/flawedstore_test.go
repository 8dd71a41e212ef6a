package enginetest

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/minikafka/minikafka/engine"
)

// A flawed store is the DirStore of flawed engines, wrapped: with no bug it
// keeps every promise of the Store contract, SharedCommit included (a Sync
// of one log syncs every open log); each bug breaks one, and the suite must
// then fail the store case that checks it.
const (
	bugStoreForgets         = "forgets its logs when reopened"
	bugStoreReusesIDs       = "hands a deleted log's id out again"
	bugStoreTrimsNeighbour  = "applies a DeleteBefore to the log with the next id too"
	bugStoreDeleteDropsTail = "drops the last batch of every open log when it deletes one"
	bugStoreOpensTwice      = "opens a log that is open"
	bugStoreOwnCommit       = "syncs only the log whose Sync was called"
	bugStoreListsFew        = "lists at most 100 logs"
	bugStoreOpensAnyDir     = "opens a directory another engine claimed as its store"
)

// storeBugs is which bug fails which store case.
var storeBugs = map[string]string{
	"CreateListOpenReopen":    bugStoreForgets,
	"IDsNeverHandedOutTwice":  bugStoreReusesIDs,
	"LogsAreIsolated":         bugStoreTrimsNeighbour,
	"DeleteUnderLoadOfOthers": bugStoreDeleteDropsTail,
	"InUseAndClosed":          bugStoreOpensTwice,
	"SyncOfOneCommitsAll":     bugStoreOwnCommit,
	"ManyLogs":                bugStoreListsFew,
	"StoreOfAnotherEngine":    bugStoreOpensAnyDir,
}

type flawedStore struct {
	engine.Store
	bug string

	mu      sync.Mutex
	open    map[engine.LogID]*flawedLog
	seen    map[engine.LogID]bool // created or opened by this instance
	deleted []engine.LogID
	alias   map[engine.LogID]engine.LogID // bugStoreReusesIDs: the id handed out -> the DirStore's
}

func openFlawedStore(d engine.Driver, dir string, opts engine.Options, bug string) (engine.Store, error) {
	inner, err := engine.OpenDirStore(d, dir, opts)
	if errors.Is(err, engine.ErrWrongEngine) && bug == bugStoreOpensAnyDir {
		fs := opts.WithDefaults().FS
		if err := engine.WriteFileAtomic(fs, fs.PathJoin(dir, engine.MarkerFile), []byte(d.Name+"\n")); err != nil {
			return nil, err
		}
		inner, err = engine.OpenDirStore(d, dir, opts)
	}
	if err != nil {
		return nil, err
	}
	return &flawedStore{Store: inner, bug: bug, open: map[engine.LogID]*flawedLog{},
		seen: map[engine.LogID]bool{}, alias: map[engine.LogID]engine.LogID{}}, nil
}

func (s *flawedStore) inner(id engine.LogID) engine.LogID {
	if in, ok := s.alias[id]; ok {
		return in
	}
	return id
}

func (s *flawedStore) Create(o engine.LogOptions) (engine.LogID, engine.LogEngine, error) {
	id, e, err := s.Store.Create(o)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bug == bugStoreReusesIDs && len(s.deleted) > 0 {
		out := s.deleted[len(s.deleted)-1]
		s.deleted = s.deleted[:len(s.deleted)-1]
		s.alias[out] = id
		id = out
	}
	return id, s.wrap(id, e), nil
}

// wrap makes e the handle of log id; the caller holds mu.
func (s *flawedStore) wrap(id engine.LogID, e engine.LogEngine) *flawedLog {
	l := &flawedLog{LogEngine: e, s: s, id: id}
	s.open[id] = l
	s.seen[id] = true
	return l
}

func (s *flawedStore) Open(id engine.LogID, o engine.LogOptions) (engine.LogEngine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.open[id]; l != nil && s.bug == bugStoreOpensTwice {
		return l, nil
	}
	e, err := s.Store.Open(s.inner(id), o)
	if err != nil {
		return nil, err
	}
	return s.wrap(id, e), nil
}

func (s *flawedStore) Delete(id engine.LogID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Store.Delete(s.inner(id)); err != nil {
		return err
	}
	s.deleted = append(s.deleted, id)
	if s.bug == bugStoreDeleteDropsTail {
		for _, l := range s.open {
			if end := l.EndOffset(); end > l.StartOffset() {
				if bs, err := l.Read(end-1, 0); err == nil && len(bs) == 1 {
					_ = l.LogEngine.Truncate(bs[0].BaseOffset)
				}
			}
		}
	}
	return nil
}

func (s *flawedStore) Logs() ([]engine.LogID, error) {
	ids, err := s.Store.Logs()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.bug {
	case bugStoreForgets:
		ids = slices.DeleteFunc(ids, func(id engine.LogID) bool { return !s.seen[id] })
	case bugStoreListsFew:
		ids = ids[:min(len(ids), 100)]
	}
	return ids, nil
}

// flawedLog is a flawed store's handle on a log.
type flawedLog struct {
	engine.LogEngine
	s  *flawedStore
	id engine.LogID
}

func (l *flawedLog) Unwrap() engine.LogEngine { return l.LogEngine }

func (l *flawedLog) Close() error {
	l.s.mu.Lock()
	if l.s.open[l.id] == l {
		delete(l.s.open, l.id)
	}
	l.s.mu.Unlock()
	return l.LogEngine.Close()
}

// Sync syncs every open log of the store (SharedCommit), but for
// bugStoreOwnCommit.
func (l *flawedLog) Sync(ctx context.Context, end int64) error {
	if l.s.bug == bugStoreOwnCommit {
		return l.LogEngine.Sync(ctx, end)
	}
	l.s.mu.Lock()
	others := make([]*flawedLog, 0, len(l.s.open))
	for _, o := range l.s.open {
		if o != l {
			others = append(others, o)
		}
	}
	l.s.mu.Unlock()
	for _, o := range others {
		if err := o.LogEngine.Sync(ctx, o.EndOffset()); err != nil && !errors.Is(err, engine.ErrClosed) {
			return err
		}
	}
	return l.LogEngine.Sync(ctx, end)
}

func (l *flawedLog) DeleteBefore(offset int64) error {
	if err := l.LogEngine.DeleteBefore(offset); err != nil {
		return err
	}
	if l.s.bug == bugStoreTrimsNeighbour {
		l.s.mu.Lock()
		next := l.s.open[l.id+1]
		l.s.mu.Unlock()
		if next != nil {
			_ = next.LogEngine.DeleteBefore(offset)
		}
	}
	return nil
}
