package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
)

// Options are everything a run does, derived from its seed (swarm testing:
// every seed draws its own cluster size, fault mix and workload) and then
// overridden by flags or a scenario. String prints them first in every
// report, so a run can be read without replaying it.
type Options struct {
	Seed    uint64
	Brokers int // 1..5
	// Voters are brokers 1..Voters, the controller quorum; the others
	// follow its metadata log (0: every broker).
	Voters int
	// Replication and the topics the producers write.
	ReplicationFactor int
	MinISR            int
	Topics            int
	Partitions        int
	// Workload.
	Producers      int
	AcksAllPct     int // share of producers with acks=all (the others acks=1)
	BatchesEach    int // batches each producer sends
	Consumers      int
	TopicChurn     bool  // create and delete extra topics while running
	ControlledStop bool  // controlled shutdowns among the faults
	ShutdownEvery  int64 // their mean ticks apart (0: 2000)
	// Transactions (txn_clients.go): transactional producers writing to
	// topic "tx" (TxnPartitions partitions) through the coordinators of
	// __transaction_state (TxnStatePartitions), each TxnsEach
	// transactions, aborting TxnAbortPct of them; TxnV1Pct of them on the
	// first transaction version (AddPartitionsToTxn before the writes, no
	// epoch bump at the end); read_committed consumers, one per partition
	// when TxnConsumers. A producer that cannot get a write acknowledged
	// within TxnGiveUpMs aborts its transaction (delivery.timeout.ms).
	TxnProducers, TxnsEach, TxnAbortPct, TxnV1Pct int
	TxnPartitions, TxnStatePartitions             int
	TxnConsumers                                  bool
	TxnGiveUpMs                                   int64
	// Copiers (copier.go), in runs with transactions: consume-transform-
	// produce clients, one per partition of topic "cin", which a producer
	// fills with CopyRecords batches each, copying them into "tx" exactly
	// once, their offsets committed in their transactions through the
	// group coordinator of __consumer_offsets.
	Copiers, CopyRecords int
	// Network, per message.
	DropPct, DupPct int
	DelayMin        int64 // ticks
	DelayMax        int64
	// Faults: the mean ticks between two of each kind during the safety
	// phase (0: never).
	CrashEvery     int64
	PartitionEvery int64
	StallEvery     int64 // links that hold messages and deliver them late
	// MetadataStallEvery: a broker's raft messages held while its other
	// links flow (scenarios).
	MetadataStallEvery int64
	DiskEvery          int64 // a disk fault: sync error, full disk, slow syncs
	SlowDisks          bool  // every disk fault is slow syncs (scenarios)
	// Crash model: the share of unsynced data a power loss keeps, and how
	// often the last write kept is torn.
	UnsyncedKeepPct int
	TornPct         int
	// Sync is the partitions' sync policy (-sync): always, or interval
	// and never, which acknowledge from memory.
	Sync engine.SyncPolicy
	// Engine is the partitions' log engine (-engine): "" or EngineModel,
	// the crash model; EngineSegment, the product's segment engine on the
	// crashable MemFS (see disk_segment.go).
	Engine string
	// RetentionBytes is the workload topics' retention.bytes (0: none): the
	// log start moves as they grow.
	RetentionBytes int64
	// DeleteRecordsEvery: the mean ticks between two moves of a
	// partition's log start by its leader, as DeleteRecords does (0: never).
	DeleteRecordsEvery int64
	// CrashController: every crash is of the active controller (Jepsen's
	// nemesis that kills the primary), when there is one; scenarios.
	CrashController bool
	// QuickRestarts: a crashed broker restarts within tens of ms, as a
	// supervisor restarts a killed process on a host that lives (with
	// LoseDiskPct: a pod rescheduled on an empty volume); scenarios.
	QuickRestarts bool
	// LoseDiskPct is the share of crashes after which the broker's
	// partition disk is replaced: it comes back with no partition data.
	LoseDiskPct int
	// FetchMaxBytes is the brokers' fetch.max.bytes (Config.FetchMaxBytes),
	// which bounds a leader's answer to its followers' fetches (0: 16
	// KiB): a small one makes a follower catch up one batch or a few per
	// fetch (scenarios).
	FetchMaxBytes int
	// SnapshotBytes is the partitions' Config.SnapshotBytes: how much a
	// partition appends between two producer state snapshots (0: the
	// product's default, which these runs never reach).
	SnapshotBytes int64
	// Phases, in ticks (1 tick = 1 ms of simulated time).
	SafetyTicks   int64
	LivenessTicks int64 // the bound for the liveness phase
	// LostBroker, when set, crashes once during the safety phase and never
	// comes back (a machine lost for good): the liveness phase then asks
	// for leaders and full ISRs among the others only.
	LostBroker int32
	// Unclean is unclean.leader.election.enable.
	Unclean bool
	// Mutation names a test-only protection switched off (see
	// mutations.go); "" for the real build.
	Mutation string
	// Scenario names the regression scenario that tuned these options.
	Scenario string
	// Profile is the run lengths Derive drew them for.
	Profile Profile
	// Flags are the command-line overrides (cmd/sim's) applied after
	// Derive, which a replay repeats.
	Flags string
}

// Profile is a preset of run lengths.
type Profile int

const (
	// ProfileCI: short schedules, so that a thousand fit in the README's
	// test command under -race.
	ProfileCI Profile = iota
	// ProfileLong: longer schedules with more work, for cmd/sim.
	ProfileLong
)

// Derive draws a run's options from its seed.
func Derive(seed uint64, p Profile) Options {
	r := rand.New(rand.NewPCG(seed, subSeedOptions))
	o := Options{Seed: seed, Profile: p}
	o.Brokers = 1 + r.IntN(5)
	if r.IntN(3) > 0 && o.Brokers < 3 { // most runs replicate
		o.Brokers = 3
	}
	o.ReplicationFactor = min(o.Brokers, 1+r.IntN(3))
	if o.Brokers >= 3 && o.ReplicationFactor < 3 && r.IntN(2) == 0 {
		o.ReplicationFactor = 3
	}
	o.MinISR = 1
	if o.ReplicationFactor >= 2 && r.IntN(3) > 0 {
		o.MinISR = 2
	}
	o.Topics = 1 + r.IntN(2)
	o.Partitions = 1 + r.IntN(2)
	o.Producers = 1 + r.IntN(3)
	o.AcksAllPct = []int{100, 100, 50, 0}[r.IntN(4)]
	o.BatchesEach = 5 + r.IntN(10)
	o.Consumers = r.IntN(3)
	o.TopicChurn = r.IntN(3) == 0
	o.ControlledStop = r.IntN(3) == 0
	o.DropPct = []int{0, 0, 1, 5, 10}[r.IntN(5)]
	o.DupPct = []int{0, 0, 1, 5}[r.IntN(4)]
	o.DelayMin = 1
	o.DelayMax = []int64{2, 5, 20, 50}[r.IntN(4)]
	o.CrashEvery = []int64{0, 800, 1500, 3000}[r.IntN(4)]
	o.PartitionEvery = []int64{0, 700, 1500, 3000}[r.IntN(4)]
	o.DiskEvery = []int64{0, 0, 1000, 3000}[r.IntN(4)]
	o.UnsyncedKeepPct = []int{0, 30, 70, 100}[r.IntN(4)]
	o.TornPct = []int{0, 50}[r.IntN(2)]
	o.SafetyTicks = 2000 + int64(r.IntN(2000))
	o.LivenessTicks = 20000
	o.SnapshotBytes = []int64{0, 512, 4096}[r.IntN(3)]
	o.StallEvery = []int64{0, 0, 1000, 2500}[r.IntN(4)]
	// Drawn after the others, so that adding them left those draws alone:
	// the product's configuration space.
	o.Sync = []engine.SyncPolicy{engine.SyncAlways, engine.SyncAlways, engine.SyncAlways, engine.SyncAlways,
		engine.SyncAlways, engine.SyncInterval, engine.SyncNever}[r.IntN(7)]
	if o.Brokers >= 3 && r.IntN(3) == 0 {
		o.Voters = 1 + r.IntN(o.Brokers-1) // some brokers follow the metadata log
	}
	if r.IntN(4) == 0 {
		o.RetentionBytes = 600 + int64(r.IntN(2400))
	}
	if r.IntN(4) == 0 {
		o.DeleteRecordsEvery = 500 + int64(r.IntN(1000))
	}
	if r.IntN(6) == 0 {
		o.LoseDiskPct = 30
	}
	if r.IntN(5) == 0 {
		o.MetadataStallEvery = 1500
	}
	if r.IntN(4) == 0 {
		o.Engine = EngineSegment
	}
	if r.IntN(4) == 0 {
		o.TxnProducers, o.TxnsEach = 1+r.IntN(3), 3+r.IntN(5)
		o.TxnAbortPct = []int{10, 30, 50}[r.IntN(3)]
		o.TxnV1Pct = []int{0, 50, 100}[r.IntN(3)]
		o.TxnPartitions, o.TxnStatePartitions = 2+r.IntN(2), 1+r.IntN(2)
		o.TxnConsumers = r.IntN(4) > 0
		o.TxnGiveUpMs = []int64{1000, 3000}[r.IntN(2)]
		if r.IntN(2) == 0 {
			o.Copiers, o.CopyRecords = 1+r.IntN(3), 3+r.IntN(6)
		}
	}
	if p == ProfileLong {
		o.TxnsEach *= 3
		o.CopyRecords *= 3
		o.SafetyTicks = 5000 + int64(r.IntN(10000))
		o.BatchesEach *= 4
		o.LivenessTicks = 40000
	}
	return o
}

// transactions reports whether the run has transactional clients: only
// where every acknowledged write is kept (sync=always, no retention, no
// replaced disk, no broker lost for good, clean elections), so that the
// transaction checkers need not tell a loss the options allow from a bug.
func (o Options) transactions() bool {
	return o.TxnProducers > 0 && o.Sync == engine.SyncAlways && o.RetentionBytes == 0 && o.DeleteRecordsEvery == 0 &&
		o.LoseDiskPct == 0 && o.LostBroker == 0 && !o.Unclean
}

// copiers is the number of copiers the run has (none without
// transactions).
func (o Options) copiers() int {
	if !o.transactions() {
		return 0
	}
	return o.Copiers
}

func (o Options) topicConfigs() map[string]string {
	if o.RetentionBytes <= 0 {
		return nil
	}
	return map[string]string{cluster.ConfigRetentionBytes: strconv.FormatInt(o.RetentionBytes, 10)}
}

// The partition engines a run can draw.
const (
	EngineModel   = "model"
	EngineSegment = "segment"
)

// partitionEngine is the registered engine the partitions open.
func (o Options) partitionEngine() string {
	if o.Engine == EngineSegment {
		return SegmentEngineName
	}
	return EngineName
}

// fetchMaxBytes bounds a leader's answer to its followers.
func (o Options) fetchMaxBytes() int {
	if o.FetchMaxBytes > 0 {
		return o.FetchMaxBytes
	}
	return fetchMaxBytes
}

func (o Options) voters() int {
	if o.Voters <= 0 || o.Voters > o.Brokers {
		return o.Brokers
	}
	return o.Voters
}

// String is the options as one line of key=value.
func (o Options) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed=%d brokers=%d rf=%d min-isr=%d topics=%dx%d producers=%d acks-all=%d%% batches=%d consumers=%d churn=%v shutdowns=%v",
		o.Seed, o.Brokers, o.ReplicationFactor, o.MinISR, o.Topics, o.Partitions, o.Producers, o.AcksAllPct, o.BatchesEach,
		o.Consumers, o.TopicChurn, o.ControlledStop)
	fmt.Fprintf(&b, " drop=%d%% dup=%d%% delay=%d-%dms crash-every=%d partition-every=%d stall-every=%d disk-every=%d unsynced-kept=%d%% torn=%d%% snapshot-bytes=%d safety=%dms liveness<=%dms",
		o.DropPct, o.DupPct, o.DelayMin, o.DelayMax, o.CrashEvery, o.PartitionEvery, o.StallEvery, o.DiskEvery, o.UnsyncedKeepPct, o.TornPct,
		o.SnapshotBytes, o.SafetyTicks, o.LivenessTicks)
	if o.transactions() {
		fmt.Fprintf(&b, " txn-producers=%d txns=%d txn-abort=%d%% txn-v1=%d%% txn-partitions=%d txn-state-partitions=%d txn-consumers=%v txn-give-up=%dms",
			o.TxnProducers, o.TxnsEach, o.TxnAbortPct, o.TxnV1Pct, o.TxnPartitions, o.TxnStatePartitions, o.TxnConsumers, o.TxnGiveUpMs)
		if o.Copiers > 0 {
			fmt.Fprintf(&b, " copiers=%d copy-records=%d", o.Copiers, o.CopyRecords)
		}
	}
	if o.Sync != engine.SyncAlways {
		fmt.Fprintf(&b, " sync=%s", o.Sync)
	}
	if o.Engine != "" && o.Engine != EngineModel {
		fmt.Fprintf(&b, " engine=%s", o.Engine)
	}
	if o.RetentionBytes > 0 {
		fmt.Fprintf(&b, " retention-bytes=%d", o.RetentionBytes)
	}
	if o.DeleteRecordsEvery > 0 {
		fmt.Fprintf(&b, " delete-records-every=%d", o.DeleteRecordsEvery)
	}
	if o.voters() < o.Brokers {
		fmt.Fprintf(&b, " voters=%d", o.voters())
	}
	if o.LoseDiskPct > 0 {
		fmt.Fprintf(&b, " lose-disk=%d%%", o.LoseDiskPct)
	}
	if o.MetadataStallEvery > 0 {
		fmt.Fprintf(&b, " metadata-stall-every=%d", o.MetadataStallEvery)
	}
	if o.FetchMaxBytes > 0 {
		fmt.Fprintf(&b, " fetch-max-bytes=%d", o.FetchMaxBytes)
	}
	if o.SlowDisks {
		b.WriteString(" slow-disks=true")
	}
	if o.QuickRestarts {
		b.WriteString(" quick-restarts=true")
	}
	if o.CrashController {
		b.WriteString(" crash-controller=true")
	}
	if o.ShutdownEvery > 0 {
		fmt.Fprintf(&b, " shutdown-every=%d", o.ShutdownEvery)
	}
	if o.LostBroker > 0 {
		fmt.Fprintf(&b, " lost-broker=%d", o.LostBroker)
	}
	if o.Unclean {
		b.WriteString(" unclean=true")
	}
	if o.Scenario != "" {
		b.WriteString(" scenario=" + o.Scenario)
	}
	if o.Mutation != "" {
		b.WriteString(" mutation=" + o.Mutation)
	}
	return b.String()
}

// Sub-seeds: each component draws from its own stream of the master seed,
// so that a change in one (a new fault kind) does not reshuffle the others.
const (
	subSeedOptions uint64 = iota + 1
	subSeedNet
	subSeedFaults
	subSeedWorkload
	subSeedDisk // + broker id * 16
	subSeedRaft
	subSeedController
	subSeedIDs
)
