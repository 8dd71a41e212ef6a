package broker

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// withTestAPI registers a handler for key for the duration of the test.
func withTestAPI(t *testing.T, key int16, h handler) {
	register(key, 0, 0, h)
	t.Cleanup(func() {
		apisMu.Lock()
		defer apisMu.Unlock()
		delete(apis[clientListener], key)
	})
}

// TestHandlerPanicClosesOnlyThatConnection: a handler bug in either phase
// answers the requests before it, closes that connection, and leaves the
// server serving everyone else.
func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	withTestAPI(t, 48, func(*request) reply { panic("ordering phase bug") })
	withTestAPI(t, 49, func(*request) reply {
		return later(func(context.Context) kmsg.Response { panic("waiting phase bug") })
	})
	s := newFuzzServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(ln) }()

	for _, key := range []int16{48, 49} {
		t.Run(kmsg.NameForKey(key), func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			meta := kmsg.NewPtrMetadataRequest()
			meta.SetVersion(1)
			f := kmsg.NewRequestFormatter()
			wire := f.AppendRequest(nil, meta, 1)
			bad := kmsg.RequestForKey(key)
			bad.SetVersion(0)
			// AppendRequest writes its length at dst[0]: one call per frame.
			wire = append(wire, f.AppendRequest(nil, bad, 2)...)
			_, err = c.Write(wire)
			require.NoError(t, err)

			require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
			var size [4]byte
			_, err = io.ReadFull(c, size[:])
			require.NoError(t, err, "the response before the panic is written")
			body := make([]byte, binary.BigEndian.Uint32(size[:]))
			_, err = io.ReadFull(c, body)
			require.NoError(t, err)
			require.Equal(t, int32(1), int32(binary.BigEndian.Uint32(body)))
			_, err = c.Read(size[:1])
			require.Error(t, err, "then the connection is closed")
			require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "closed, not merely silent")
		})
	}
	out, _, err := dispatchFrame(s, kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 3)[4:])
	require.NoError(t, err)
	require.NotEmpty(t, out, "the server still serves")
}

func TestDecodeFlexibleHeaderTags(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	name := "t"
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &name
	req.Topics = append(req.Topics, rt)
	frame := binary.BigEndian.AppendUint16(nil, 3)
	frame = binary.BigEndian.AppendUint16(frame, 12)
	frame = binary.BigEndian.AppendUint32(frame, 9)
	frame = binary.BigEndian.AppendUint16(frame, 2)
	frame = append(frame, 'i', 'd')
	frame = append(frame, 2, 0, 2, 'x', 'y', 7, 0) // two tagged fields: 0 = "xy", 7 = ""
	frame = req.AppendTo(frame)

	h, a, body, err := decode(frame, clientListener)
	require.NoError(t, err)
	require.Equal(t, header{key: 3, version: 12, corr: 9, clientID: "id"}, h)
	require.Equal(t, "Metadata", a.name)
	got := body.(*kmsg.MetadataRequest)
	require.Len(t, got.Topics, 1)
	require.Equal(t, "t", *got.Topics[0].Topic)
}
