package broker

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzTopics are created in the fuzzing server; the recorded seeds use them.
var fuzzTopics = []string{"seed", "seed-sarama", "seed-admin"}

// newFuzzServer is a server on the memory engine that is not listening:
// requests go through dispatchFrame directly.
func newFuzzServer(tb testing.TB) *Server {
	s, err := New(Config{Dir: tb.TempDir(), Engine: "memory", DefaultPartitions: 2, MaxPartitions: 8})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, s.Close()) })
	// Not listening: register with the controller by hand.
	s.start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(tb, s.WaitReady(ctx))
	for _, name := range fuzzTopics {
		require.NoError(tb, s.createTopicsVia(ctx, name, 3, 1))
	}
	return s
}

// dispatchFrame runs one request frame (without its length prefix) the way
// a connection does: decode, ordering phase, waiting phase (cut short after
// a moment so long polls end), encode. It returns the response frame, nil
// for no response, or the error that would close the connection.
func dispatchFrame(s *Server, frame []byte) ([]byte, header, error) {
	h, a, body, err := decode(frame, clientListener)
	if err != nil {
		return nil, h, err
	}
	p := &pending{}
	defer func() { s.respBudget.release(p.respCharge) }()
	rep := a.serve(&request{s: s, c: &conn{remote: "192.0.2.1:9"}, p: p, hdr: h, body: body})
	resp := rep.resp
	switch {
	case rep.err != nil:
		return nil, h, rep.err
	case rep.none:
		return nil, h, nil
	case rep.wait != nil:
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		resp = rep.wait(ctx)
		cancel()
	}
	return encodeResponse(nil, h, resp), h, nil
}

// FuzzDispatch feeds request frames to the dispatcher: nothing may panic,
// and every response must decode with kmsg at the version it claims. Seeds
// in testdata/fuzz/FuzzDispatch are requests recorded from franz-go and
// sarama (see TestRecordSeeds).
func FuzzDispatch(f *testing.F) {
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, frame []byte) {
		out, h, err := dispatchFrame(s, frame)
		if err != nil || out == nil {
			return
		}
		checkResponse(t, out, h)
	})
}

// checkResponse decodes a response frame produced for the request header h.
func checkResponse(t *testing.T, out []byte, h header) {
	t.Helper()
	if got := int(binary.BigEndian.Uint32(out)); got != len(out)-4 {
		t.Fatalf("frame length %d, have %d bytes", got, len(out)-4)
	}
	if corr := int32(binary.BigEndian.Uint32(out[4:])); corr != h.corr {
		t.Fatalf("correlation id %d, want %d", corr, h.corr)
	}
	resp := kmsg.ResponseForKey(h.key)
	resp.SetVersion(h.version)
	body := out[8:]
	if h.key == apiVersionsKey {
		// A v0 fallback when the version is not served.
		if lookupAPI(clientListener, h.key).max < h.version {
			resp.SetVersion(0)
		}
	} else if resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s v%d response does not decode: %v", kmsg.NameForKey(h.key), h.version, err)
	}
}
