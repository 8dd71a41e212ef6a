// Package broker is mini-kafka's Kafka protocol server: TCP, framing,
// dispatch, limits and the behaviour of each API, over the partitions of
// package partition on any registered engine. Message bodies are encoded and
// decoded only by franz-go's kmsg.
//
// # Lifecycle
//
//	s, err := broker.New(broker.Config{Dir: dir, Engine: "segment"})
//	go s.Serve(ln)         // or s.ListenAndServe()
//	...
//	err = s.Close()        // stop accepting, answer what was read, sync, close
//
// Tests start one with brokertest.Start(t, ...).
//
// # Connections
//
// Each connection has a reader and a writer goroutine (conn.go). The reader
// reads a frame (frame.go: the length is checked against MaxFrameBytes before
// anything is allocated, the body buffer grows only as bytes arrive, a frame
// must arrive within FrameTimeout once it has begun), takes its length from
// the server-wide in-flight byte budget (budget.go), decodes it (dispatch.go)
// and runs the API's handler: the handler's "ordering phase". What must
// happen in request order (appending produced batches, so an idempotent
// producer's pipelined sequences arrive in order) happens there. Anything
// that waits goes in the handler's "waiting phase", which runs on a goroutine
// of its own while the reader goes on. The writer writes the responses
// strictly in request order. At most MaxInflightPerConn requests are between
// read and written per connection. A Kafka-level problem is an error code in
// the response; a request that cannot be decoded, an unknown API key or a
// version outside the served range closes the connection, after the
// responses to the requests before it. Timeouts read the injected clock.
//
// # Adding an API
//
// One file per API key, named NN_api_name.go, starting with a comment that
// lists the versions served and the behaviours, and registering in init:
//
//	func init() { register(12, 0, 4, handleHeartbeat) }
//
//	func handleHeartbeat(r *request) reply {
//		req := r.body.(*kmsg.HeartbeatRequest)
//		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
//		...
//		return done(resp) // or later(func(ctx) kmsg.Response {...}) to wait
//	}
//
// ApiVersions advertises exactly what is registered, so nothing can be
// advertised that is not served. A handler returns done(resp) when the
// response is ready, later(wait) when it must wait (wait runs on its own
// goroutine and must return promptly once ctx ends), reply{none: true} for
// no response (Produce acks=0), or fail(err) to close the connection.
//
// # Extensions
//
// State beyond the partitions (consumer groups) plugs in the same way, from
// init: registerExtension(name, open). New calls open(s) after the
// partitions are open and keeps the value it returns; handlers get it with
// s.extension(name). Close closes it (if it is an io.Closer) after every
// connection has drained and before the partitions close. Extensions reach
// the partitions with s.Partitions(), the configuration with s.Config(), and
// this broker's identity with NodeID and s.AdvertisedHostPort().
//
// # Metrics
//
// Prometheus metrics named minikafka_*: requests and their latency per API,
// open and refused connections, bad requests, the produce durability wait,
// the engines' sync rounds as every durable engine reports them through
// engine.Options.Observer (their latency, count, failures, bytes, and the
// group-commit size: batches per round), bytes on disk and in-flight request
// bytes. (*Server).MetricsHandler serves them.
package broker
