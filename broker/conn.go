package broker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/bufpool"
	"github.com/minikafka/minikafka/cluster"
)

// conn serves one client connection with two goroutines:
//
//   - the reader reads a frame, decodes it and runs its handler's ordering
//     phase, then queues the pending response and reads the next frame;
//     a handler's waiting phase runs on a goroutine of its own;
//   - the writer takes pending responses off the queue in request order,
//     waits for each to be ready and writes it.
//
// At most MaxInflightPerConn requests are between read and written, and their
// frames count against the server's in-flight byte budget until written, so
// a connection's memory is bounded whatever its client does.
type conn struct {
	s        *Server
	listener listener // which APIs this connection may use
	// heartbeats is the broker whose heartbeats arrive on this controller
	// connection, and its epoch: when it closes, the controller fences it.
	heartbeats atomic.Pointer[cluster.BrokerRef]
	nc         net.Conn
	br         *bufio.Reader
	log        *slog.Logger
	remote     string

	// ctx ends when the connection dies (a write fails) or the server stops
	// hard; waiting phases watch it. readCtx ends, in addition, when reading
	// must stop (shutdown, a timed-out frame).
	ctx       context.Context
	cancel    context.CancelFunc
	readCtx   context.Context
	stopReads context.CancelFunc

	slots chan struct{} // one per request between read and written
	queue chan *pending // in request order
	readW *watchdog     // idle and frame deadlines
	done  chan struct{} // closed when the writer has finished

	// The writer goroutine's own.
	bw     *bufio.Writer
	writeW *watchdog // write deadline
	broken bool      // nothing more is written
}

// pending is one request between its ordering phase and its written response.
type pending struct {
	hdr    header
	api    *api
	read   time.Time     // when the frame had fully arrived
	charge int64         // budget bytes to release once written
	ready  chan struct{} // nil if resp was ready at once; else closed when it is
	resp   kmsg.Response
	none   bool  // no response is written
	err    error // close the connection here (set before queueing)
	// waitErr is err for a waiting phase that failed; the writer reads it
	// after ready is closed.
	waitErr error
	// respCharge is what the response holds of the server's response
	// budget (a fetch's records); the waiting phase sets it, the writer
	// releases it once the response is written.
	respCharge int64
	// lease holds the pooled memory the response's records are in (a
	// fetch's); the writer releases it once the response is encoded, which
	// copies them, and written or dropped.
	lease bufpool.Lease
}

func newConn(s *Server, nc net.Conn, l listener) *conn {
	c := &conn{
		s:        s,
		listener: l,
		nc:       nc,
		br:       bufio.NewReaderSize(nc, 16<<10),
		remote:   nc.RemoteAddr().String(),
		slots:    make(chan struct{}, s.cfg.MaxInflightPerConn),
		queue:    make(chan *pending, s.cfg.MaxInflightPerConn),
		done:     make(chan struct{}),
	}
	c.log = s.log.With("remote", c.remote)
	c.ctx, c.cancel = context.WithCancel(s.connCtx)
	c.readCtx, c.stopReads = context.WithCancel(c.ctx)
	c.readW = newWatchdog(s.cfg.Clock, c.stopReadingLocked)
	return c
}

// serve runs the connection until it ends; it returns once both goroutines
// have finished and the socket is closed.
func (c *conn) serve() {
	go c.write()
	c.read()
	<-c.done
}

// lostHeartbeats runs once the connection has ended: a broker whose
// heartbeats came this way is fenced at once, sooner than its session
// timeout, unless this node is shutting down (then it is not the broker
// that went away).
func (c *conn) lostHeartbeats() {
	ref := c.heartbeats.Load()
	if ref == nil || c.s.shuttingDown() {
		return
	}
	c.s.bg.Add(1)
	go func() {
		defer c.s.bg.Done()
		ctx, cancel := withTimeout(context.Background(), c.s.cfg.Clock, c.s.cfg.Cluster.SessionTimeout)
		defer cancel()
		c.s.ctl.ConnectionLost(ctx, ref.ID, ref.Epoch)
	}()
}

// stopReading makes the reader stop at its next read or wait: used by
// graceful shutdown. Requests already read still get their responses.
func (c *conn) stopReading() {
	c.readW.mu.Lock()
	defer c.readW.mu.Unlock()
	c.stopReadingLocked()
}

// stopReadingLocked is the watchdog's action; it must not block.
func (c *conn) stopReadingLocked() {
	c.stopReads()
	_ = c.nc.SetReadDeadline(pastDeadline)
}

func (c *conn) read() {
	defer close(c.queue)
	for {
		select {
		case c.slots <- struct{}{}:
		case <-c.readCtx.Done():
			return
		}
		p, err := c.readRequest()
		if err != nil {
			<-c.slots
			c.logReadError(err)
			if !c.s.shuttingDown() {
				// The client left or broke the framing: nobody will
				// read the responses still pending, so cancel them.
				c.fail()
			}
			return
		}
		stop := p.err != nil // read before the writer owns p
		c.queue <- p
		if stop {
			return
		}
	}
}

// readRequest reads and decodes one frame and runs its ordering phase.
func (c *conn) readRequest() (*pending, error) {
	cfg := &c.s.cfg
	c.readW.arm(cfg.IdleTimeout)
	if _, err := c.br.Peek(1); err != nil {
		return nil, err
	}
	// The first byte is here: the rest of the frame has FrameTimeout.
	c.readW.arm(cfg.FrameTimeout)
	n, err := readFrameSize(c.br, cfg.MaxFrameBytes)
	if err != nil {
		return nil, err
	}
	// Waiting for budget is not the client's fault: no deadline meanwhile.
	c.readW.disarm()
	if err := c.s.budget.acquire(c.readCtx, int64(n)); err != nil {
		return nil, err
	}
	c.readW.arm(cfg.FrameTimeout)
	frame, err := readFrameBody(c.br, n)
	c.readW.disarm()
	if err != nil {
		c.s.budget.release(int64(n))
		return nil, err
	}
	p := &pending{read: c.s.cfg.Clock.Now(), charge: int64(n)}
	h, a, body, err := decode(frame, c.listener)
	p.hdr, p.api = h, a
	if err != nil {
		c.s.metrics.badRequests.Inc()
		c.log.Info("closing connection: bad request", "key", h.key, "version", h.version, "err", err)
		p.err = err
		return p, nil
	}
	c.run(p, &request{s: c.s, c: c, p: p, hdr: h, body: body})
	return p, nil
}

// run calls the handler and arranges for its waiting phase.
func (c *conn) run(p *pending, r *request) {
	rep := c.serveSafely(p.api, r)
	switch {
	case rep.err != nil:
		c.log.Info("closing connection: protocol error", "api", p.api.name, "err", rep.err)
		p.err = rep.err
	case rep.none:
		p.none = true
	case rep.wait != nil:
		p.ready = make(chan struct{})
		go func() {
			defer close(p.ready)
			defer func() {
				if v := recover(); v != nil {
					p.waitErr = c.handlerPanic(p.api, v)
				}
			}()
			p.resp = rep.wait(c.ctx)
		}()
	default:
		p.resp = rep.resp
	}
}

// serveSafely runs a handler's ordering phase. A handler that panics is a
// bug, but one client's request must not take every other client down: the
// panic is logged with its stack and that connection is closed.
func (c *conn) serveSafely(a *api, r *request) (rep reply) {
	defer func() {
		if v := recover(); v != nil {
			rep = fail(c.handlerPanic(a, v))
		}
	}()
	return a.serve(r)
}

func (c *conn) handlerPanic(a *api, v any) error {
	c.s.metrics.badRequests.Inc()
	c.log.Error("handler panicked; closing the connection", "api", a.name, "panic", v, "stack", string(debug.Stack()))
	return fmt.Errorf("%w: %s handler panicked: %v", errHandlerPanic, a.name, v)
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF) || clientGone(err):
		c.log.Debug("client closed the connection", "err", err)
	case c.readCtx.Err() != nil && c.s.shuttingDown():
		c.log.Debug("stopped reading for shutdown")
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Info("closing connection: read timed out (idle, or a frame that did not arrive in time)")
	default:
		c.log.Info("closing connection", "err", err)
	}
}

func (c *conn) write() {
	defer close(c.done)
	defer c.nc.Close()
	defer c.cancel()

	c.bw = bufio.NewWriterSize(c.nc, 32<<10)
	c.writeW = newWatchdog(c.s.cfg.Clock, func() { _ = c.nc.SetWriteDeadline(pastDeadline) })
	var buf []byte
	for {
		p, ok := c.next()
		if !ok {
			return
		}
		if !c.broken && p.err == nil && !p.none && p.resp != nil {
			if hint := responseSizeHint(p.resp); hint > cap(buf) {
				putLargeBuf(buf)
				buf = getLargeBuf(hint)
			}
			buf = encodeResponse(buf[:0], p.hdr, p.resp)
			c.writeW.arm(c.s.cfg.WriteTimeout)
			_, err := c.bw.Write(buf)
			c.writeW.disarm()
			c.writeFailed(err)
			if cap(buf) > smallBufMax {
				// Large buffers go back to the shared pool rather than
				// stay with a connection that may now idle.
				putLargeBuf(buf)
				buf = nil
			}
		}
		c.finish(p)
		if p.err != nil && !c.broken {
			c.flush()
			c.broken = true
			c.fail()
		}
	}
}

// next returns the next pending response once ready, flushing what is
// buffered before it blocks. It returns false when the reader has finished
// and the queue is drained.
func (c *conn) next() (*pending, bool) {
	var p *pending
	var ok bool
	select {
	case p, ok = <-c.queue:
	default:
		c.flush()
		p, ok = <-c.queue
	}
	if !ok {
		c.flush()
		return nil, false
	}
	if p.ready != nil {
		select {
		case <-p.ready:
		default:
			c.flush()
			// The waiting phase watches c.ctx, so this ends promptly
			// even when the connection is dying.
			<-p.ready
		}
		if p.waitErr != nil {
			p.err, p.resp = p.waitErr, nil
		}
	}
	return p, true
}

// flush writes out what is buffered, within WriteTimeout.
func (c *conn) flush() {
	if c.broken || c.bw.Buffered() == 0 {
		return
	}
	c.writeW.arm(c.s.cfg.WriteTimeout)
	err := c.bw.Flush()
	c.writeW.disarm()
	c.writeFailed(err)
}

// writeFailed ends the connection after a failed write (a client gone, or
// one that did not take its responses within WriteTimeout).
func (c *conn) writeFailed(err error) {
	if err == nil || c.broken {
		return
	}
	if clientGone(err) {
		// The client hung up first: the ordinary end of a connection.
		c.log.Debug("closing connection: client gone", "err", err)
	} else {
		c.log.Info("closing connection: write failed", "err", err)
	}
	c.broken = true
	c.fail()
}

// clientGone reports whether a write failed because the peer had already
// closed (or reset) the connection, or because we closed it after its EOF.
func clientGone(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNRESET)
}

// fail kills the connection: reads stop, waiting phases are cancelled.
func (c *conn) fail() {
	c.stopReading()
	c.cancel()
	_ = c.nc.Close()
}

// encodeResponse appends the whole frame of resp, the answer to the request
// with header hdr.
func encodeResponse(dst []byte, hdr header, resp kmsg.Response) []byte {
	// ApiVersions answers a version it does not serve with a v0 response
	// (its handler sets that); every other response is in the request's
	// version, whatever the handler built it with.
	if hdr.key != apiVersionsKey {
		resp.SetVersion(hdr.version)
	}
	flexible := resp.IsFlexible() && hdr.key != apiVersionsKey
	dst = appendResponseHeader(dst, hdr.corr, flexible)
	dst = resp.AppendTo(dst)
	finishFrame(dst)
	return dst
}

// smallBufMax is the largest encode buffer a connection keeps for itself.
const smallBufMax = 64 << 10

// largeBufs recycles the encode buffers of large responses (fetches) across
// connections, so a consumer's every fetch does not allocate and zero
// megabytes afresh.
var largeBufs sync.Pool

func getLargeBuf(n int) []byte {
	if b, ok := largeBufs.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	} else if ok {
		largeBufs.Put(b)
	}
	return make([]byte, 0, n)
}

func putLargeBuf(b []byte) {
	if cap(b) > smallBufMax {
		largeBufs.Put(&b)
	}
}

// responseSizeHint estimates the encoded size of resp when it may be large
// (a fetch: the record bytes plus a generous per-partition overhead), so the
// buffer is allocated once instead of grown by doubling; 0 for the rest.
func responseSizeHint(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 64
	for i := range f.Topics {
		t := &f.Topics[i]
		n += 64 + len(t.Topic)
		for j := range t.Partitions {
			n += 96 + len(t.Partitions[j].RecordBatches)
		}
	}
	return n
}

// finish accounts for a request whose response was written (or dropped).
func (c *conn) finish(p *pending) {
	c.s.budget.release(p.charge)
	c.s.respBudget.release(p.respCharge)
	p.lease.Release()
	<-c.slots
	if p.api != nil && p.err == nil {
		c.s.metrics.observe(p.api.name, c.s.cfg.Clock.Now().Sub(p.read))
	}
}
