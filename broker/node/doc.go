// Package node is a broker's shell around the cluster's state machines:
// its standing with the controller (registration, heartbeats, producer id
// blocks, controlled shutdown), the reconciler that makes its partitions
// what the metadata says, the replica fetchers of the partitions it
// follows, the answer a leader gives its followers' fetches, the
// AlterPartition proposals of the partitions it leads, the metadata log a
// broker that is not a voter follows, where controller requests go, and
// the active controller's queue of operations.
//
// Every piece decides without waiting: it is given the time and what
// happened (an answer, an error, a new metadata image) and says what to
// send or do next (a Call to the controller, a Fetch to a leader, a batch
// to propose to the quorum, partitions to open or remove). None starts a
// goroutine, reads a clock, arms a timer or touches a socket. The drivers
// do that: the broker (package broker) with its goroutines, franz-go
// clients and the injected clock; the simulator (package sim) on its event
// queue, simulated network and simulated clock. So the simulator runs the
// decisions the product makes, not a copy of them.
//
// Pieces that the broker drives from more than one goroutine at once say
// so (Fetchers and Fetcher are safe for concurrent use); the others belong
// to one driver goroutine at a time.
package node
