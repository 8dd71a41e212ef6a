package engine

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DirStore is the Store of an engine whose logs are directories (segment's,
// and any registered engine without a store of its own): each log is
// opened with the driver's Open in a directory of its own.
//
//	<dir>/ENGINE            the engine's name (ClaimDir)
//	<dir>/LOGIDS            ids below the one it holds may have been handed out
//	<dir>/<id>/             a log: the engine's directory, the id in 16 hex digits
//	<dir>/<id>.deleting     a deleted log's directory, being removed
//
// A log's directory holds an ENGINE marker of its own unless the driver
// has an OpenInStore, for which the store's marker speaks for every log
// (directories made before it, or adopted, keep theirs, which nothing
// reads).
//
// Ids are reserved idBlock at a time in LOGIDS (a checked file, replaced
// atomically) before any of them is handed out, so that an id is never
// handed out twice whatever crashes, at the cost of one atomic write per
// idBlock creations. Delete renames the log's directory aside, durably,
// and hands it to Options.Discard (the broker's paced deleter), or removes
// it at once when there is none; Open hands any a crash left aside to it
// again. A DirStore starts no goroutine and arms no timer of its own.
type DirStore struct {
	d    Driver
	fs   vfs.FS
	dir  string
	opts Options

	mu       sync.Mutex
	closed   bool
	next     LogID // the next id Create hands out
	reserved LogID // ids below it are reserved in LOGIDS
	open     map[LogID]*dirLog
}

var (
	_ Store   = (*DirStore)(nil)
	_ Adopter = (*DirStore)(nil)
)

const (
	logIDsFile    = "LOGIDS"
	logIDsMagic   = "LIDS"
	deletedSuffix = ".deleting"
	// idBlock is how many ids one write of LOGIDS reserves.
	idBlock = 1024
)

// OpenDirStore opens (or creates) the DirStore of driver d in dir.
func OpenDirStore(d Driver, dir string, opts Options) (*DirStore, error) {
	opts = opts.WithDefaults()
	s := &DirStore{d: d, fs: opts.FS, dir: dir, opts: opts, open: map[LogID]*dirLog{}}
	if err := ClaimDir(s.fs, dir, d.Name); err != nil {
		return nil, err
	}
	body, found, err := ReadChecked(s.fs, s.fs.PathJoin(dir, logIDsFile), logIDsMagic)
	switch {
	case err != nil:
		return nil, fmt.Errorf("engine %s: store %s: %w (the ids handed out are unknown: restore the file or start the store afresh)", d.Name, dir, err)
	case found && len(body) != 8:
		return nil, fmt.Errorf("engine %s: store %s: %s holds %d bytes, want 8: %w", d.Name, dir, logIDsFile, len(body), ErrCorrupt)
	case found:
		s.reserved = LogID(binary.BigEndian.Uint64(body))
	}
	s.next = s.reserved
	names, err := s.fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("engine %s: list %s: %w", d.Name, dir, err)
	}
	slices.Sort(names)
	for _, n := range names {
		if aside, ok := strings.CutSuffix(n, deletedSuffix); ok {
			if _, err := ParseLogID(aside); err == nil {
				s.discard(s.fs.PathJoin(dir, n)) // a deletion a crash or a Close cut short
			}
			continue
		}
		if id, err := ParseLogID(n); err == nil {
			s.next = max(s.next, id+1)
		}
	}
	return s, nil
}

func (s *DirStore) logDir(id LogID) string { return s.fs.PathJoin(s.dir, id.String()) }

func (s *DirStore) discard(path string) {
	if s.opts.Discard != nil {
		s.opts.Discard(path)
		return
	}
	if err := s.fs.RemoveAll(path); err != nil {
		s.opts.Logger.Warn("engine: removing a deleted log failed; the next open retries", "dir", path, "err", err)
	}
}

// Create implements Store.
func (s *DirStore) Create(o LogOptions) (LogID, LogEngine, error) {
	id, err := s.newID()
	if err != nil {
		return 0, nil, err
	}
	// The directory is what makes the log exist: it is synced into the
	// store's directory before Create says so (ClaimDir does it too).
	if err := s.makeLogDir(id); err != nil {
		return 0, nil, fmt.Errorf("engine %s: create log %s: %w", s.d.Name, id, err)
	}
	l, err := s.openLog(id, o)
	if err != nil {
		return 0, nil, err
	}
	return id, l, nil
}

// makeLogDir makes log id's directory, durably: with its own marker when
// the driver opens its logs with Open, bare for OpenInStore.
func (s *DirStore) makeLogDir(id LogID) error {
	if s.d.OpenInStore == nil {
		return ClaimDir(s.fs, s.logDir(id), s.d.Name)
	}
	if err := s.fs.MkdirAll(s.logDir(id), 0o755); err != nil {
		return err
	}
	return SyncDir(s.fs, s.dir)
}

// newID hands out the next id, reserving a block first when it is the
// last reserved one.
func (s *DirStore) newID() (LogID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	if s.next >= s.reserved {
		upto := s.next + idBlock
		if err := WriteChecked(s.fs, s.fs.PathJoin(s.dir, logIDsFile), logIDsMagic, binary.BigEndian.AppendUint64(nil, uint64(upto))); err != nil {
			return 0, fmt.Errorf("engine %s: reserve log ids: %w", s.d.Name, err)
		}
		s.reserved = upto
	}
	id := s.next
	s.next++
	return id, nil
}

// Open implements Store.
func (s *DirStore) Open(id LogID, o LogOptions) (LogEngine, error) {
	if s.d.OpenInStore == nil {
		// Open would make the directory: it must be there first.
		if err := s.haveLog(id); err != nil {
			return nil, err
		}
		return s.openLog(id, o)
	}
	// OpenInStore makes nothing in a directory that is not there, so the
	// stat is needed only to tell why it failed: a broker that reopens
	// thousands of logs spares one system call each.
	l, err := s.openLog(id, o)
	if err != nil {
		if herr := s.haveLog(id); herr != nil {
			return nil, herr
		}
	}
	return l, err
}

// haveLog returns ErrNoLog when log id's directory is not there.
func (s *DirStore) haveLog(id LogID) error {
	if _, err := s.fs.Stat(s.logDir(id)); oserror.IsNotExist(err) {
		return fmt.Errorf("engine %s: log %s: %w", s.d.Name, id, ErrNoLog)
	} else if err != nil {
		return fmt.Errorf("engine %s: log %s: %w", s.d.Name, id, err)
	}
	return nil
}

func (s *DirStore) openLog(id LogID, o LogOptions) (LogEngine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ErrClosed
	case s.open[id] != nil:
		return nil, fmt.Errorf("engine %s: log %s: %w", s.d.Name, id, ErrLogInUse)
	}
	open := s.d.Open
	if s.d.OpenInStore != nil {
		open = s.d.OpenInStore
	}
	e, err := open(s.logDir(id), o.apply(s.opts))
	if err != nil {
		return nil, err
	}
	l := &dirLog{LogEngine: e, s: s, id: id}
	s.open[id] = l
	return l, nil
}

// Delete implements Store.
func (s *DirStore) Delete(id LogID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.open[id] != nil:
		return fmt.Errorf("engine %s: delete log %s: %w", s.d.Name, id, ErrLogInUse)
	}
	dir, aside := s.logDir(id), s.logDir(id)+deletedSuffix
	if err := s.fs.Rename(dir, aside); oserror.IsNotExist(err) {
		return fmt.Errorf("engine %s: delete log %s: %w", s.d.Name, id, ErrNoLog)
	} else if err != nil {
		return fmt.Errorf("engine %s: delete log %s: %w", s.d.Name, id, err)
	}
	if err := SyncDir(s.fs, s.dir); err != nil {
		return fmt.Errorf("engine %s: delete log %s: %w", s.d.Name, id, err)
	}
	s.discard(aside)
	return nil
}

// Reserve implements Adopter.
func (s *DirStore) Reserve() (LogID, error) { return s.newID() }

// Adopt implements Adopter: dir, a log of the store's engine, is renamed
// into the store as log id, and both directories are synced.
func (s *DirStore) Adopt(id LogID, dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case id >= s.next:
		return fmt.Errorf("engine %s: adopt %s as log %s: the id was not reserved", s.d.Name, dir, id)
	}
	if s.d.OpenInStore != nil {
		// OpenInStore checks no marker: the adopted directory's is
		// checked here, once.
		if err := ClaimDir(s.fs, dir, s.d.Name); err != nil {
			return fmt.Errorf("engine %s: adopt %s as log %s: %w", s.d.Name, dir, id, err)
		}
	}
	to := s.logDir(id)
	if _, err := s.fs.Stat(to); err == nil {
		return fmt.Errorf("engine %s: adopt %s as log %s: the store has that log already", s.d.Name, dir, id)
	}
	if err := s.fs.Rename(dir, to); err != nil {
		return fmt.Errorf("engine %s: adopt %s as log %s: %w", s.d.Name, dir, id, err)
	}
	if err := SyncDir(s.fs, s.dir); err != nil {
		return err
	}
	return SyncDir(s.fs, s.fs.PathDir(dir))
}

// Logs implements Store.
func (s *DirStore) Logs() ([]LogID, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	names, err := s.fs.List(s.dir)
	if err != nil {
		return nil, fmt.Errorf("engine %s: list %s: %w", s.d.Name, s.dir, err)
	}
	var ids []LogID
	for _, n := range names {
		if id, err := ParseLogID(n); err == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Close implements Store.
func (s *DirStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	open := make([]*dirLog, 0, len(s.open))
	for _, l := range s.open {
		open = append(open, l)
	}
	s.mu.Unlock()
	var first error
	for _, l := range open {
		if err := l.LogEngine.Close(); err != nil && first == nil && !isClosed(err) {
			first = err
		}
	}
	return first
}

func (s *DirStore) release(l *dirLog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[l.id] == l {
		delete(s.open, l.id)
	}
}

// dirLog is a DirStore's handle on an open log: the engine's, whose Close
// also tells the store.
type dirLog struct {
	LogEngine
	s  *DirStore
	id LogID
}

func (l *dirLog) Close() error {
	err := l.LogEngine.Close()
	l.s.release(l)
	return err
}

func (l *dirLog) Unwrap() LogEngine { return l.LogEngine }
