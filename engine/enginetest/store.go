package enginetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

// storeCases are the cases of the Store contract, run under Store after
// the log cases there: each names the rule it checks, and each has a broken
// store that fails it in the self-test (storeBugs).
var storeCases = []struct {
	name string
	fn   func(t *testing.T, d engine.Driver, dir string)
}{
	{"CreateListOpenReopen", testStoreReopen},
	{"IDsNeverHandedOutTwice", testStoreIDs},
	{"LogsAreIsolated", testStoreIsolation},
	{"DeleteUnderLoadOfOthers", testStoreDeleteUnderLoad},
	{"InUseAndClosed", testStoreInUse},
	{"SyncOfOneCommitsAll", testStoreSharedCommit},
	{"ManyLogs", testStoreManyLogs},
	{"StoreOfAnotherEngine", testStoreWrongEngine},
}

// soleLog opens the one log of the driver's store in dir, creating it in a
// new store: the log cases run on it as they run on a log opened alone.
// Closing it closes the store too.
func soleLog(d engine.Driver) engine.OpenFunc {
	return func(dir string, opts engine.Options) (engine.LogEngine, error) {
		s, err := d.OpenStoreIn(dir, opts)
		if err != nil {
			return nil, err
		}
		ids, err := s.Logs()
		var e engine.LogEngine
		switch {
		case err != nil:
		case len(ids) == 0:
			_, e, err = s.Create(engine.LogOptions{})
		default:
			e, err = s.Open(ids[0], engine.LogOptions{})
		}
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		return &onlyLog{LogEngine: e, s: s}, nil
	}
}

// onlyLog is a log and the store it is alone in.
type onlyLog struct {
	engine.LogEngine
	s engine.Store
}

func (l *onlyLog) Close() error {
	err := l.LogEngine.Close()
	if cerr := l.s.Close(); err == nil && !errors.Is(cerr, engine.ErrClosed) {
		err = cerr
	}
	return err
}

func (l *onlyLog) Unwrap() engine.LogEngine { return l.LogEngine }

// storeHarness opens stores of one driver on one directory and closes
// what is left open when the case ends.
type storeHarness struct {
	t      *testing.T
	d      engine.Driver
	dir    string
	stores []engine.Store
}

func newStoreHarness(t *testing.T, d engine.Driver, dir string) *storeHarness {
	h := &storeHarness{t: t, d: d, dir: dir}
	t.Cleanup(func() {
		for _, s := range h.stores {
			if err := s.Close(); err != nil && !errors.Is(err, engine.ErrClosed) {
				t.Errorf("contract: store Close returned %v", err)
			}
		}
	})
	return h
}

func (h *storeHarness) openStore(opts engine.Options) engine.Store {
	h.t.Helper()
	s, err := h.d.OpenStoreIn(h.dir, opts)
	require.NoError(h.t, err, "open the %s store in %s", h.d.Name, h.dir)
	h.stores = append(h.stores, s)
	return s
}

// reopen closes s, opens the store again and opens the logs ids in it.
func (h *storeHarness) reopen(s engine.Store, opts engine.Options, ids []engine.LogID) (engine.Store, []engine.LogEngine) {
	h.t.Helper()
	require.NoError(h.t, s.Close())
	s = h.openStore(opts)
	es := make([]engine.LogEngine, len(ids))
	for n, id := range ids {
		es[n] = open(h.t, s, id)
	}
	return s, es
}

func (h *storeHarness) needDurable() {
	if !h.d.Caps.Durable {
		h.t.Skipf("engine %s does not declare Durable: nothing survives a reopen", h.d.Name)
	}
}

// create makes a log, failing the case if it cannot.
func create(t *testing.T, s engine.Store) (engine.LogID, engine.LogEngine) {
	t.Helper()
	id, e, err := s.Create(engine.LogOptions{})
	require.NoError(t, err, "contract: Create makes a new log")
	return id, e
}

// open opens a log, failing the case if it cannot.
func open(t *testing.T, s engine.Store, id engine.LogID) engine.LogEngine {
	t.Helper()
	e, err := s.Open(id, engine.LogOptions{})
	require.NoError(t, err, "contract: Open of log %s, which Create made", id)
	return e
}

// logBatch is the batch log number n of a case writes at base: its size
// says which log it belongs to (size mod 16 is n), so a log that reads
// another's batch reads different bytes even where both logs have a batch
// with the same offsets.
func logBatch(n int, base int64, records int32, i int) engine.Batch {
	return Batch(base, records, 16*(2+i%40)+n)
}

// appendLog appends k batches of log n at its end and returns them.
func appendLog(t *testing.T, e engine.LogEngine, n, k int) []engine.Batch {
	t.Helper()
	var out []engine.Batch
	for i := range k {
		b := logBatch(n, e.EndOffset(), int32(1+(i+n)%4), i)
		require.NoError(t, e.Append(b), "contract: Append at the end offset succeeds")
		out = append(out, b)
	}
	return out
}
