package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Registration: each NN_api_name.go file in this package calls register in
// its init function with the API key, the version range it handles and its
// handler. ApiVersions advertises exactly the registered ranges, and dispatch
// refuses (closes the connection on) any key or version outside them, so what
// is advertised and what is served cannot drift apart.
//
// There are two listeners, each with its own set of APIs: clients' (register)
// and the controller's (registerController: broker registration and
// heartbeats, AlterPartition, producer id blocks, and the topic changes that
// brokers forward), so that a client never sees a controller API advertised
// and a controller connection never serves a client API.
//
// A handler runs on the connection's reader goroutine, one request at a time
// in the order the client sent them. That is the "ordering phase": anything
// whose order matters (appending produce batches, so idempotent sequences
// arrive in order) happens there, and it must not block for long. Anything
// that waits (a durable write, the high watermark, a fetch long poll, a group
// rebalance) goes in reply.wait, which runs on its own goroutine while the
// reader moves on to the next request. Responses are written strictly in
// request order whichever phase produced them.

// handler serves one API key. It returns the reply for r; it never returns a
// Go error for a Kafka-level problem (those are error codes in the response).
type handler func(r *request) reply

// reply is what a handler produces: exactly one of resp, wait or none.
type reply struct {
	// resp is a complete response.
	resp kmsg.Response
	// wait computes the response on its own goroutine. ctx ends when the
	// connection or the server goes away; wait must then return promptly
	// (any response, it will not be written).
	wait func(ctx context.Context) kmsg.Response
	// none: the request gets no response at all (Produce with acks=0).
	none bool
	// err closes the connection after the responses before it are written:
	// the client broke the protocol.
	err error
}

func done(resp kmsg.Response) reply                            { return reply{resp: resp} }
func later(wait func(ctx context.Context) kmsg.Response) reply { return reply{wait: wait} }
func fail(err error) reply                                     { return reply{err: err} }

// request is one decoded request on its way through a handler.
type request struct {
	s    *Server
	c    *conn
	p    *pending // its accounting (the response budget a fetch holds)
	hdr  header
	body kmsg.Request
}

// api is one registered API key.
type api struct {
	key      int16
	name     string
	min, max int16
	serve    handler
}

// listener is which listener a connection came in on.
type listener int

const (
	clientListener listener = iota
	controllerListener
)

func (l listener) String() string {
	if l == controllerListener {
		return "controller"
	}
	return "client"
}

var (
	apisMu sync.RWMutex
	apis   = map[listener]map[int16]*api{clientListener: {}, controllerListener: {}}
)

// register adds the handler of one client API key for versions min..max. It
// is meant for init functions; a bad or duplicate registration is a
// programming error and panics. max may not exceed what kmsg can decode.
func register(key, minVersion, maxVersion int16, serve handler) {
	registerOn(clientListener, key, minVersion, maxVersion, serve)
}

// registerController is register for the controller listener.
func registerController(key, minVersion, maxVersion int16, serve handler) {
	registerOn(controllerListener, key, minVersion, maxVersion, serve)
}

func registerOn(l listener, key, minVersion, maxVersion int16, serve handler) {
	apisMu.Lock()
	defer apisMu.Unlock()
	apis := apis[l]
	req := kmsg.RequestForKey(key)
	switch {
	case req == nil:
		panic(fmt.Sprintf("broker: register: kmsg does not know API key %d", key))
	case minVersion < 0 || maxVersion < minVersion || maxVersion > req.MaxVersion():
		panic(fmt.Sprintf("broker: register %s: bad version range %d..%d (kmsg max %d)",
			kmsg.NameForKey(key), minVersion, maxVersion, req.MaxVersion()))
	case apis[key] != nil:
		panic(fmt.Sprintf("broker: register: %s registered twice on the %s listener", kmsg.NameForKey(key), l))
	}
	apis[key] = &api{key: key, name: kmsg.NameForKey(key), min: minVersion, max: maxVersion, serve: serve}
}

// lookupAPI returns the registration of key on listener l, or nil.
func lookupAPI(l listener, key int16) *api {
	apisMu.RLock()
	defer apisMu.RUnlock()
	return apis[l][key]
}

// registered lists every registration on listener l ordered by key (for
// ApiVersions).
func registered(l listener) []*api {
	apisMu.RLock()
	defer apisMu.RUnlock()
	out := make([]*api, 0, len(apis[l]))
	for _, a := range apis[l] {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *api) int { return int(a.key) - int(b.key) })
	return out
}

// Errors that close a connection because a request cannot be served.
var (
	errUnknownAPI     = errors.New("unknown API key")
	errUnsupportedVer = errors.New("unsupported API version")
	errUndecodable    = errors.New("undecodable request")
	errHandlerPanic   = errors.New("internal error")
)

// decode parses one request frame: the header, then the body with kmsg.
// ApiVersions above our range is let through undecoded (body nil): the
// handler answers it with a v0 response as KIP-511 asks.
func decode(frame []byte, l listener) (header, *api, kmsg.Request, error) {
	h, rest, err := parseHeaderPrefix(frame)
	if err != nil {
		return h, nil, nil, err
	}
	a := lookupAPI(l, h.key)
	if a == nil {
		return h, nil, nil, fmt.Errorf("%w %d", errUnknownAPI, h.key)
	}
	if h.version < a.min || (h.version > a.max && h.key != apiVersionsKey) {
		return h, a, nil, fmt.Errorf("%w: %s v%d (serving v%d-v%d)", errUnsupportedVer, a.name, h.version, a.min, a.max)
	}
	if h.key == apiVersionsKey && h.version > a.max {
		return h, a, nil, nil
	}
	body := kmsg.RequestForKey(h.key)
	body.SetVersion(h.version)
	if body.IsFlexible() {
		if rest, err = skipTags(rest); err != nil {
			return h, a, nil, err
		}
	}
	if err := body.ReadFrom(rest); err != nil {
		return h, a, nil, fmt.Errorf("%w: %s v%d: %w", errUndecodable, a.name, h.version, err)
	}
	return h, a, body, nil
}

// whenReady holds h's requests, on a broker not yet registered and
// unfenced, until it is (see Server.awaitReady); then, and on a ready
// broker at once, h serves them. For the requests that tell a client
// where brokers, leaders and coordinators are: h must not fail the
// connection (reply.err).
func whenReady(h handler) handler {
	return func(r *request) reply {
		if r.s.ready() {
			return h(r)
		}
		return later(func(ctx context.Context) kmsg.Response {
			r.s.awaitReady(ctx)
			rep := h(r)
			if rep.wait != nil {
				return rep.wait(ctx)
			}
			return rep.resp
		})
	}
}
