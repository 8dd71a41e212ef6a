// Package sim is mini-kafka's deterministic cluster simulator, after
// TigerBeetle's VOPR: N brokers (1 to 5; the first 1 to N controller voters) run
// in one goroutine on a simulated clock, driving the project's own code —
// quorum.Node (etcd raft), cluster.Store and Metadata.Apply,
// cluster.ControllerCore and the decisions of cluster.Settings, the
// broker's node shell (package broker/node: the lifecycle and producer id
// blocks, the reconciler, the replica fetchers and a leader's answer to
// its followers' fetches, AlterPartition, the controller's operation
// queue, where controller requests go) and each broker's partition layer,
// broker/partition (a partition.Manager per incarnation in Manual mode,
// with the replication package's Leader and Follower, producer state,
// epoch cache, checkpoints and recovery inside it), and, in a share of
// the seeds, the transaction coordinator (broker/txn's Core, per
// partition of __transaction_state) and the group coordinator's offsets
// (broker/group's Coordinator, per partition of __consumer_offsets,
// through its event forms StartTxnOffsetCommit, StartWriteMarker and
// MarkerDurable) — with faults, from one seed. What the simulator writes itself is what the broker's goroutines,
// sockets and timers do around those: the drivers (broker.go, rpc.go,
// lifecycle.go, reconcile.go, fetch.go), the network, the disk's crash
// model, the clock, the clients and the checkers. It holds no decision of
// the product's.
//
// # The loop
//
// Time is in ticks of one simulated millisecond. A priority queue holds
// (tick, sequence, event); Run pops the earliest, runs it on the node it
// belongs to, and schedules what it causes: messages through the simulated
// network, syncs through the crash-model disk (a partition that asks for
// one, Partition.SyncWanted, gets a Partition.Sync event), timers on the
// clock (Manager.Tick every 50ms). The messages are the product's:
// raftpb.Message between quorum nodes, the kmsg requests and responses of
// the controller APIs (BrokerRegistration, BrokerHeartbeat, AlterPartition,
// AllocateProducerIDs, CreateTopics, DeleteTopics), and Kafka's Fetch of
// the replica fetchers, answered by node.ServeFollower at the leader. A
// run has a safety phase with faults, then a liveness phase that heals
// everything and must, within a bound, give every partition a leader and a
// full ISR and let every producer finish (a partition that disk
// replacements left with no ISR or ELR member is offline for good, as in
// Kafka, and asked nothing of).
//
// # Faults
//
// Per run, drawn from the seed (swarm testing: each seed its own mix):
// message drop, duplication and delay (hence reordering); partitions,
// symmetric, asymmetric and FoundationDB's swizzle-clog; stalls (links
// that hold what is sent and deliver it seconds late, so requests built
// from a state long gone reach receivers that have moved on); broker
// crashes (power loss: the disk keeps what was synced and a seeded share of
// the rest, the last write maybe torn) and restarts through the same
// recovery code the broker runs (partition.OpenManager on what the disk
// kept), some of them with the partitions' disk replaced (it comes back
// empty, under a new directory id); a sync that fails (the broker halts),
// a full disk, slow syncs; metadata stalls (a broker's raft messages held
// while its data links flow, so its image lags); controlled shutdowns; and,
// in scenarios, a broker lost for good, crashes aimed at the active
// controller, restarts within tens of milliseconds, and small fetch
// answers (the brokers' fetch.max.bytes), so that followers catch up a
// batch or a few at a time.
//
// # Engines and the configuration space
//
// The quorum's raft log runs on the crash model (disk.go: a log that keeps
// its synced batches and a seeded prefix of the rest, the last maybe
// torn). The partitions run on it too, or, in a quarter of the seeds
// (-engine segment), on the product's segment engine opened Inline on the
// broker's crashable MemFS (disk_segment.go): a power loss is then
// pebble's CrashClone of the files, and segment's own recovery decides
// what is left. pebble and badger do not run here: both start goroutines
// of their own (compactions, flushes, value-log GC) that no option turns
// off, so no schedule on them would replay. Seeds also draw the sync
// policy (always; interval and never, which acknowledge from the page
// cache: an acknowledged batch every holder lost unsynced in power losses
// is excused, and counted as acked-lost-unsynced), non-voter brokers that
// follow the metadata log, retention and DeleteRecords moves of the log
// start with consumers resetting to it, disk replacement and controlled
// shutdowns. Unclean leader election is on only in scenarios: with it, a
// lost acknowledged write is what the setting allows, and the checkers
// would need to tell it from a bug.
//
// # Checkers
//
// One per file (check_*.go), named after Jepsen's anomalies: lost-write,
// duplicate, inconsistent-offsets (also: replicas byte-identical below the
// high watermark), nonmonotonic-poll, poll-skip; two-leaders (one leader
// per partition per epoch), epoch-regression, hw-regression,
// read-above-hw, duplicate-producer-id, epoch-ahead (a log holding an
// epoch above its replica's role), isr-behind (a member of a committed
// ISR, in the process its registration names, without an acknowledged
// record: a lost write one election away), ineligible-join (a committed
// batch that adds a fenced or shutting-down broker to an ISR), and
// liveness; and "partition":
// an error of the partition layer that the broker could only log (a role
// it cannot take, a partition it cannot open or remove). The checkers read
// the partitions through their API (ReadLog for the stored bytes).
//
// Transactions (txn_clients.go, txn_coord.go): transactional producers,
// read_committed consumers, and copiers (copier.go, group_coord.go):
// consume-transform-produce clients that copy topic "cin" into "tx",
// their input offsets committed in their transactions (TxnOffsetCommit)
// and read back with RequireStable. Their checkers: aborted-read,
// txn-lost-write, txn-partial-read, hanging-transaction (check_txn.go);
// exactly-once, G1a, G0 and G1c over the committed copier transactions,
// with the orders Kafka promises spelled out (check_copy.go).
//
// # Determinism and replay
//
// One master seed; each component draws from its own sub-seed (network,
// faults, workload, each broker's disk and raft). Nothing else decides: no
// goroutine, no real clock, no map iteration order (the partition
// managers run in Manual mode on the simulated clock, which refuses to arm
// a timer). The same seed gives
// the same trace hash (TestDeterminism). A failure prints the options, the
// violation, the end of the trace and the one command that replays it:
//
//	go run ./cmd/sim -seed N
//
// # Mutations
//
// Each named scenario (scenarios.go) passes on the real build and must
// fail with its protection off. The switches exist only in a build with
// the mutations tag: replication's (replication/mutations_on.go, handed to
// every Leader and Follower through the partitions' ConfigureLeader and
// ConfigureFollower seams) and the controller's (cluster.Settings.Mutate);
// unclean election is a product setting. TestMutations runs the tagged test
// binary as a subprocess, so `go test ./...` covers it.
package sim
