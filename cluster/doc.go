// Package cluster is mini-kafka's controller: the metadata of the cluster as
// a pure state machine, and the rules that change it.
//
// # The metadata log
//
// Everything the cluster agrees on is a Record in the metadata log: brokers
// (id, incarnation, endpoints, rack, broker epoch, fenced or not), topics
// (name, id, configs), partitions (replicas, ISR, eligible leader replicas,
// leader, leader epoch, partition epoch) and the producer id blocks handed
// out. A log entry is a batch of records applied atomically: Metadata.Apply
// checks the whole batch against the current image and either applies all
// of it or none, so a replica never holds half of a change, and a batch that
// a stale decision produced (two controllers deciding on the same image) is
// refused the same way on every replica.
//
// A Metadata value is an immutable image: Apply returns a new one that
// shares what did not change. Readers (the broker's request handlers, the
// simulator's checkers) hold an image without locks while the log moves on.
//
// # Decisions
//
// The active controller turns requests (a broker registering, a heartbeat,
// CreateTopics, AlterPartition, a session that expired) into records with
// the functions of decide.go, elect.go and place.go: functions of an image,
// the time and a random source passed in, with no I/O, clock or goroutine of
// their own. ControllerCore (core*.go) keeps the sessions and the barrier
// of each term and turns a request into operations that ask for a batch to
// commit and go on once it is applied, without waiting itself; Controller
// (controller.go) is its blocking shell for the broker, proposing to the
// quorum (package quorum, etcd raft), and the simulator (package sim)
// drives the same core from one goroutine.
//
// # Epochs
//
// Every leader change bumps the partition's leader epoch and every change at
// all its partition epoch; a broker's epoch is the log offset of its latest
// registration. All three only grow, and requests carrying an older one are
// refused (compare with <, never ≠).
package cluster
