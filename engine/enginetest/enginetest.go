// Package enginetest is the conformance suite every engine runs:
//
//	func TestConformance(t *testing.T) { enginetest.Run(t, segment.Driver) }
//
// Each case opens a fresh engine in its own directory, names the part of the
// engine.LogEngine contract it checks, and reports every violation it finds
// rather than stopping at the first. Cases that need a capability the driver
// does not declare are skipped with the reason. Fsync failures are injected
// with pebble's vfs/errorfs.
//
// The suite tests itself (selftest_test.go): it passes a correct engine,
// and each case fails on an engine built to break the one rule that case
// checks, run in a child process so that the failure can be seen.
package enginetest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

// cases are the suite, in order: each names the part of the contract it
// checks. Every case has a broken engine that fails it in the self-test
// (selftest_test.go), so a case that cannot fail shows.
var cases = []struct {
	name string
	fn   func(*testing.T, *harness)
}{
	{"AppendAssignsContiguousOffsets", testContiguous},
	{"AppendRefusesWrongBase", testWrongBase},
	{"ReadFindsBatchFromAnyOffsetInIt", testReadWithinBatch},
	{"ReadAtAndPastEnd", testReadPastEnd},
	{"ReadReturnsAtLeastOneBatch", testMaxBytes},
	{"ReadReturnsCallerOwnedBytes", testOwnership},
	{"ReadIntoMatchesRead", testReadInto},
	{"ReopenKeepsSyncedBatches", testReopen},
	{"ManySegmentsReadAndReopen", testManySegments},
	{"TruncateThenAppend", testTruncate},
	{"TruncateOutOfRange", testTruncateOutOfRange},
	{"DeleteBeforeMovesStart", testDeleteBefore},
	{"DeleteBeforePastEndRestartsLog", testDeleteBeforePastEnd},
	{"ConcurrentAppendersAndReaders", testConcurrent},
	{"OneMiBBatch", testLargeBatch},
	{"EmptyAndOversizedBatches", testBadBatches},
	{"SyncHonoursContext", testSyncContext},
	{"ObserverSeesEverySyncRound", testObserver},
	{"EveryCallAfterClose", testClosed},
	{"DirectoryOfAnotherEngine", testWrongEngine},
}

// Run runs the conformance suite against the driver: every case on a log
// the driver opens alone (Driver.Open, as the controller quorum's raft log
// is), then, under Store, every case again on a log of the driver's Store
// (as the broker's partitions are), and the cases of the Store contract.
func Run(t *testing.T, d engine.Driver) {
	runLogCases(t, d, d.Open)
	t.Run("Store", func(t *testing.T) {
		runLogCases(t, d, soleLog(d))
		for _, c := range storeCases {
			t.Run(c.name, func(t *testing.T) { c.fn(t, d, filepath.Join(t.TempDir(), "store")) })
		}
	})
}

func runLogCases(t *testing.T, d engine.Driver, open engine.OpenFunc) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &harness{t: t, d: d, open: open, dir: filepath.Join(t.TempDir(), "log")}
			c.fn(t, h)
			h.closeAll()
		})
	}
}

// harness opens engines of one driver on one directory, each time with
// open, and closes whatever is left open when the case ends.
type harness struct {
	t      *testing.T
	d      engine.Driver
	open   engine.OpenFunc
	dir    string
	opened []engine.LogEngine
}

func (h *harness) openWith(opts engine.Options) engine.LogEngine {
	h.t.Helper()
	e, err := h.open(h.dir, opts)
	require.NoError(h.t, err, "open %s engine on %s", h.d.Name, h.dir)
	h.opened = append(h.opened, e)
	return e
}

func (h *harness) openDefault() engine.LogEngine { return h.openWith(engine.Options{}) }

func (h *harness) closeAll() {
	for _, e := range h.opened {
		if err := e.Close(); err != nil && !errors.Is(err, engine.ErrClosed) {
			h.t.Errorf("contract: Close returned %v", err)
		}
	}
}

func (h *harness) needDurable() {
	if !h.d.Caps.Durable {
		h.t.Skipf("engine %s does not declare Durable: nothing survives a reopen", h.d.Name)
	}
}

// payload makes recognisable batch bytes: the base offset, the record count,
// then size-12 bytes drawn from a generator seeded by the base offset, so any
// batch can be checked byte for byte from its offsets alone.
func payload(base int64, records int32, size int) []byte {
	if size < 12 {
		size = 12
	}
	b := make([]byte, size)
	binary.BigEndian.PutUint64(b, uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(records))
	r := rand.New(rand.NewPCG(uint64(base), uint64(size)))
	for i := 12; i < size; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Batch returns the batch the suite writes at base: its bytes are a function
// of base, records and size, so Check can verify it. Exported for crashtest
// and benchmarks.
func Batch(base int64, records int32, size int) engine.Batch {
	return engine.Batch{BaseOffset: base, Records: records, Data: payload(base, records, size)}
}

// Check reports whether b is exactly what Batch(b.BaseOffset, b.Records, len(b.Data)) made.
func Check(b engine.Batch) error {
	if len(b.Data) < 12 {
		return fmt.Errorf("batch at %d: %d bytes, too short to be ours", b.BaseOffset, len(b.Data))
	}
	if got := int64(binary.BigEndian.Uint64(b.Data)); got != b.BaseOffset {
		return fmt.Errorf("batch at %d holds the bytes of the batch at %d", b.BaseOffset, got)
	}
	if got := int32(binary.BigEndian.Uint32(b.Data[8:])); got != b.Records {
		return fmt.Errorf("batch at %d: records %d, bytes say %d", b.BaseOffset, b.Records, got)
	}
	want := payload(b.BaseOffset, b.Records, len(b.Data))
	for i := range want {
		if want[i] != b.Data[i] {
			return fmt.Errorf("batch at %d: byte %d is %#x, want %#x", b.BaseOffset, i, b.Data[i], want[i])
		}
	}
	return nil
}

// appendN appends n batches of the given records and size at the log end and
// returns them.
func appendN(t *testing.T, e engine.LogEngine, n int, records int32, size int) []engine.Batch {
	t.Helper()
	var out []engine.Batch
	for range n {
		b := Batch(e.EndOffset(), records, size)
		require.NoError(t, e.Append(b), "contract: Append at the end offset succeeds")
		out = append(out, b)
	}
	return out
}

// ReadAll reads the whole log from StartOffset, maxBytes a Read, and
// reports (without stopping the test) a batch that does not check out or
// does not follow the one before it. Engines' own tests read their logs
// with it.
func ReadAll(t testing.TB, e engine.LogEngine, maxBytes int) []engine.Batch {
	t.Helper()
	var out []engine.Batch
	off := e.StartOffset()
	for off < e.EndOffset() {
		bs, err := e.Read(off, maxBytes)
		require.NoError(t, err, "contract: Read(%d) inside [start, end) succeeds", off)
		require.NotEmpty(t, bs, "contract: Read(%d) below the end returns at least one batch", off)
		for _, b := range bs {
			if len(out) > 0 && b.BaseOffset != out[len(out)-1].NextOffset() {
				t.Errorf("contract: batches are contiguous: batch at %d follows one ending at %d", b.BaseOffset, out[len(out)-1].NextOffset())
			}
			if err := Check(b); err != nil {
				t.Errorf("contract: Read returns bytes as appended: %v", err)
			}
			out = append(out, b)
		}
		off = bs[len(bs)-1].NextOffset()
	}
	return out
}

func sameBatches(t *testing.T, want, got []engine.Batch, what string) {
	t.Helper()
	if !assert.Equal(t, len(want), len(got), "%s: batch count", what) {
		return
	}
	for i := range want {
		if want[i].BaseOffset != got[i].BaseOffset || want[i].Records != got[i].Records || string(want[i].Data) != string(got[i].Data) {
			t.Errorf("%s: batch %d differs: want base %d records %d (%d bytes), got base %d records %d (%d bytes)",
				what, i, want[i].BaseOffset, want[i].Records, len(want[i].Data), got[i].BaseOffset, got[i].Records, len(got[i].Data))
		}
	}
}

func syncAll(t *testing.T, e engine.LogEngine) {
	t.Helper()
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()), "contract: Sync succeeds")
}
