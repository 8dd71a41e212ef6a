package batch_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz seed corpora from franz-go-built batches")

// seedBatches are real batches, one per codec, idempotent and not, with keys.
func seedBatches(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, c := range codecs {
		out["plain-"+c.String()] = batchtest.Make(t, batchtest.Spec{
			Values: batchtest.Values("value", 3), Keys: batchtest.Values("key", 3), Timestamp: 1_700_000_000_000, Codec: c,
		})
		out["idempotent-"+c.String()] = batchtest.Make(t, batchtest.Spec{
			Values: batchtest.Values("v", 5), Timestamp: 1_700_000_000_000, Codec: c,
			Idempotent: true, ProducerID: 1000, ProducerEpoch: 2, BaseSequence: 40,
		})
	}
	return out
}

// TestWriteFuzzSeeds regenerates the committed seed corpora with
// `go test ./broker/batch -run TestWriteFuzzSeeds -update-seeds`.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("run with -update-seeds to rewrite testdata/fuzz")
	}
	seeds := seedBatches(t)
	var all [][]byte
	for name, b := range seeds {
		writeSeed(t, "FuzzParse", name, b)
		all = append(all, b)
	}
	writeSeed(t, "FuzzSplit", "ten-batches", bytes.Join(all, nil))
	writeSeed(t, "FuzzSplit", "one-batch", seeds["plain-none"])
}

func writeSeed(t *testing.T, target, name string, b []byte) {
	dir := filepath.Join("testdata", "fuzz", target)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(b)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
}

// FuzzParse: Parse never panics, and a batch it accepts is self-consistent
// and stays valid after the in-place patches.
func FuzzParse(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := batch.Parse(b)
		if err != nil {
			return
		}
		if h.Size() != len(b) || h.NumRecords != h.LastOffsetDelta+1 || h.NumRecords < 1 {
			t.Fatalf("accepted an inconsistent header %+v for %d bytes", h, len(b))
		}
		hh, err := batch.ParseHeader(b)
		if err != nil || hh != h {
			t.Fatalf("ParseHeader disagrees with Parse: %+v %v", hh, err)
		}
		batch.SetBaseOffset(b, 12345)
		batch.SetPartitionLeaderEpoch(b, 6)
		h2, err := batch.Parse(b)
		if err != nil || h2.BaseOffset != 12345 || h2.PartitionLeaderEpoch != 6 {
			t.Fatalf("patching broke the batch: %+v %v", h2, err)
		}
	})
}

// FuzzSplit: Split never panics, and what it returns tiles the input with
// batches of at least a header each.
func FuzzSplit(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		parts, err := batch.Split(in)
		if err != nil {
			return
		}
		if len(parts) > len(in)/batch.HeaderSize {
			t.Fatalf("%d parts from %d bytes", len(parts), len(in))
		}
		for i, p := range parts {
			if len(p) < batch.HeaderSize {
				t.Fatalf("part %d is %d bytes", i, len(p))
			}
		}
		if !bytes.Equal(bytes.Join(parts, nil), in) {
			t.Fatal("parts do not tile the input")
		}
	})
}
