package broker_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn speaks the Kafka protocol by hand, to send what no client would.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err, "dial %s", addr)
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

// write sends bytes as they are.
func (r *rawConn) write(b []byte) {
	r.t.Helper()
	require.NoError(r.t, r.c.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, err := r.c.Write(b)
	require.NoError(r.t, err, "write")
}

// frame prefixes body with its length.
func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// encode is a whole request frame for req at its set version.
func (r *rawConn) encode(req kmsg.Request) []byte {
	r.corr++
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, r.corr)
}

// roundTrip sends req and decodes its response.
func (r *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	r.write(r.encode(req))
	body := r.readFrame()
	resp := req.ResponseKind()
	require.GreaterOrEqual(r.t, len(body), 4, "response frame")
	require.Equal(r.t, r.corr, int32(binary.BigEndian.Uint32(body)), "correlation id")
	body = body[4:]
	if resp.IsFlexible() && req.Key() != 18 {
		require.Equal(r.t, byte(0), body[0], "empty response header tags")
		body = body[1:]
	}
	require.NoError(r.t, resp.ReadFrom(body), "decode %s response", kmsg.NameForKey(req.Key()))
	return resp
}

func (r *rawConn) readFrame() []byte {
	r.t.Helper()
	require.NoError(r.t, r.c.SetReadDeadline(time.Now().Add(10*time.Second)))
	var size [4]byte
	_, err := io.ReadFull(r.c, size[:])
	require.NoError(r.t, err, "read response size")
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(r.c, body)
	require.NoError(r.t, err, "read response body")
	return body
}

// expectClosed asserts the broker closes the connection (without sending
// anything more) within a generous real-time bound.
func (r *rawConn) expectClosed(why string) {
	r.t.Helper()
	require.NoError(r.t, r.c.SetReadDeadline(time.Now().Add(10*time.Second)))
	n, err := r.c.Read(make([]byte, 1))
	require.Zero(r.t, n, "%s: no bytes expected", why)
	require.Error(r.t, err, "%s: connection should be closed", why)
	require.False(r.t, errors.Is(err, os.ErrDeadlineExceeded), "%s: connection still open after 10s", why)
}

// metadataWorks asserts a fresh connection is served normally.
func metadataWorks(t *testing.T, addr string) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	resp := dialRaw(t, addr).roundTrip(req).(*kmsg.MetadataResponse)
	require.Len(t, resp.Brokers, 1, "metadata from a healthy connection")
}

// closedSoon reports whether the peer closes c within a few seconds (an open
// connection costs the whole wait: call it concurrently).
func closedSoon(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if err == nil {
		return false
	}
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}
