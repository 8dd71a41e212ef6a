package broker

import "context"

// Server is one running Kafka-compatible server under test: a
// *proc.Child.
type Server interface {
	// Addr is host:port for the clients.
	Addr() string
	// PeakRSS is the server's peak resident memory so far (VmHWM), or an
	// error when it cannot be measured (a server inside this process).
	PeakRSS() (int64, error)
	// Stop shuts the server down and releases it.
	Stop() error
}

// Target is a server kind the benchmark measures, started fresh for each
// repetition on an empty data directory.
type Target struct {
	// Name labels the target in the report: "kfake", "segment", ...
	Name string
	// Reference marks the target the others are compared with (kfake).
	Reference bool
	Start     func(ctx context.Context, dir string) (Server, error)
}
