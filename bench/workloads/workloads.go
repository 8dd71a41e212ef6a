// Package workloads holds the benchmarks as data: one YAML file per
// workload (NAME.yaml beside this file, embedded in the binary), and the
// types they decode into. `go run ./cmd/bench -profile NAME` runs
// NAME.yaml; `-profile path/to/file.yaml` runs a file that is not
// embedded. A new benchmark is a new file, not Go code.
//
// YAML because the workloads are read and changed by people: comments say
// why a number is what it is, and the format is the one OpenMessaging
// Benchmark's workloads use. go.yaml.in/yaml/v3 (the YAML organisation's
// maintained yaml.v3) decodes them with unknown fields refused, so a typo
// fails the run instead of silently measuring the default.
//
// A workload names the servers it measures (kfake, or an engine of
// cmd/broker: memory, segment, pebble, badger), the topology and sync
// policy they run under, its cells and its targets:
//
//	name: broker
//	servers: [kfake, segment, pebble, badger]
//	reference: kfake          # "over: kfake" divides by its figure
//	reps: 3
//	cells:
//	  - name: throughput
//	    steps:
//	      - produce: {records: 1000000, record_bytes: 100, acks: all, idempotent: true}
//	      - consume: {}
//	    columns: [produce.records_per_s, {figure: produce.records_per_s, over: kfake}]
//	targets:
//	  - {name: produce, cell: throughput, server: segment, figure: produce.records_per_s, over: kfake, at_least: 0.8, gate: true}
//
// A cell is measured once per server per repetition, each time on a
// fresh server on an empty directory; repetitions interleave the servers
// (rep 1 of every server, then rep 2, ...) so that a machine that slows
// down slows every server alike. A cell's steps run in order; each step
// adds figures to the repetition, named STEP.FIGURE (the step's kind, or
// its `as:` name when a cell has two of a kind), and the runner adds the
// server's own (server.peak_rss_bytes). A figure's name carries its unit:
// _per_s a rate, _s seconds, _bytes bytes, anything else a count.
//
// A target is (figure, bound): a statistic (median by default, or p50,
// p90, p99, min, max) of a figure over a cell's repetitions on one
// server, optionally over the same statistic on another server, judged
// at_least or at_most its bound. The runner judges every target the same
// way (package bench/result); no profile has a judge of its own.
// Targets marked gate are the ratios cmd/benchcheck fails a regression on.
//
// -quick runs every cell once with its record counts, durations, rounds
// and bulk topics divided by the workload's quick.divide: a smoke run that
// checks the workload end to end, not a measurement.
package workloads

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

//go:embed *.yaml
var files embed.FS

// Workload is one benchmark: what it measures, on which servers, and the
// targets it is judged by.
type Workload struct {
	Name  string `yaml:"name" json:"name"`
	Title string `yaml:"title" json:"title"`
	// Description is the report's opening paragraph: how the workload
	// runs, in words. Reports generate no prose from data.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Servers are measured in this order in every repetition of every
	// cell, unless the cell names its own.
	Servers []string `yaml:"servers" json:"servers"`
	// Reference is the server that "over" compares with.
	Reference string   `yaml:"reference,omitempty" json:"reference,omitempty"`
	Reps      int      `yaml:"reps" json:"reps"`
	Quick     Quick    `yaml:"quick,omitempty" json:"quick,omitzero"`
	Topology  Topology `yaml:"topology,omitempty" json:"topology,omitzero"`
	Cells     []Cell   `yaml:"cells" json:"cells"`
	Targets   []Target `yaml:"targets,omitempty" json:"targets,omitempty"`
	Charts    []Chart  `yaml:"charts,omitempty" json:"charts,omitempty"`
}

// Chart is a picture of figures of a cell: the share of its repetitions
// within a value (an empirical distribution, log value axis), a line per
// server and figure, the first figure solid, the others dashed; a target
// on the first figure draws its bound. With Along it is a sweep instead:
// the median of the first figure in each of those cells, in order, a line
// per server (log value axis), the cells' ticks labelled by Ticks. It is
// written to NAME-FILE.png beside the report, after the table of Cell.
type Chart struct {
	File    string   `yaml:"file" json:"file"`
	Title   string   `yaml:"title" json:"title"`
	Cell    string   `yaml:"cell" json:"cell"`
	Figures []string `yaml:"figures" json:"figures"`
	Along   []string `yaml:"along,omitempty" json:"along,omitempty"`
	Ticks   []string `yaml:"ticks,omitempty" json:"ticks,omitempty"`
}

// Quick says how -quick shrinks the workload.
type Quick struct {
	// Divide divides record counts and durations (default 10).
	Divide int `yaml:"divide,omitempty" json:"divide,omitempty"`
}

// Topology is how the servers run.
type Topology struct {
	// Brokers above 1 makes each engine server a cluster of that many
	// cmd/broker processes, every one a controller voter (kfake is always
	// one).
	Brokers int `yaml:"brokers,omitempty" json:"brokers,omitempty"`
	// Sync is the broker's -sync policy: always (the default), interval,
	// never. kfake has none.
	Sync string `yaml:"sync,omitempty" json:"sync,omitempty"`
	// Partitions of the cell's topic (default 8).
	Partitions int32 `yaml:"partitions,omitempty" json:"partitions,omitempty"`
	// BrokerArgs are extra cmd/broker flags.
	BrokerArgs []string `yaml:"broker_args,omitempty" json:"broker_args,omitempty"`
	// Netns places each broker of a cluster on a host of its own, a
	// network namespace with its own address (broker/harness/netlab; root
	// and iproute2), which isolate and cut need.
	Netns bool `yaml:"netns,omitempty" json:"netns,omitempty"`
	// DiskBytes gives each broker of a cluster a filesystem of its own of
	// that size (a tmpfs; root), which fill_disk needs.
	DiskBytes int64 `yaml:"disk_bytes,omitempty" json:"disk_bytes,omitempty"`
	// Upgrade starts the cluster on the older build cmd/bench's
	// -upgrade-from names; rolling_restart with upgrade moves it to this
	// one. Without -upgrade-from the cell is left out.
	Upgrade bool `yaml:"upgrade,omitempty" json:"upgrade,omitempty"`
}

// Cell is one measurement repeated on every server.
type Cell struct {
	Name        string `yaml:"name" json:"name"`
	Title       string `yaml:"title,omitempty" json:"title,omitempty"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Servers and Reps override the workload's for this cell.
	Servers []string `yaml:"servers,omitempty" json:"servers,omitempty"`
	Reps    int      `yaml:"reps,omitempty" json:"reps,omitempty"`
	// Topology, when set, overrides the workload's for this cell: the
	// fields it sets.
	Topology *Topology `yaml:"topology,omitempty" json:"topology,omitempty"`
	// Rounds repeat the steps on the same server (or cluster), each round
	// a repetition of its own (default 1): a fault measured ten times on
	// one cluster, which each round leaves whole again.
	Rounds int `yaml:"rounds,omitempty" json:"rounds,omitempty"`
	// Setup steps run once per server start, before the rounds; their
	// figures go to every round's repetition, and the loads they start
	// run through every round (their audit goes to the last one).
	Setup []Step `yaml:"setup,omitempty" json:"setup,omitempty"`
	Steps []Step `yaml:"steps" json:"steps"`
	// Columns are the report table's figures, a row per server.
	Columns []Column `yaml:"columns" json:"columns"`
}

// Step is one thing a cell does; exactly one field is set. Every step
// adds STEP.s, how long it took; a step after a kill or a stop also adds
// STEP.since_fault_s, from just before the signal to the step's end (the
// failover figures).
type Step struct {
	// As names the step's figures when a cell has two steps of a kind.
	As          string       `yaml:"as,omitempty" json:"as,omitempty"`
	Produce     *Produce     `yaml:"produce,omitempty" json:"produce,omitempty"`
	Consume     *Consume     `yaml:"consume,omitempty" json:"consume,omitempty"`
	CreateTopic *CreateTopic `yaml:"create_topic,omitempty" json:"create_topic,omitempty"`
	Kill        *Fault       `yaml:"kill,omitempty" json:"kill,omitempty"`
	Stop        *Fault       `yaml:"stop,omitempty" json:"stop,omitempty"`
	Restart     *Restart     `yaml:"restart,omitempty" json:"restart,omitempty"`
	Wait        *Wait        `yaml:"wait,omitempty" json:"wait,omitempty"`
	Load        *Pump        `yaml:"load,omitempty" json:"load,omitempty"`
	Track       *Track       `yaml:"track,omitempty" json:"track,omitempty"`
	Fill        *Fill        `yaml:"fill,omitempty" json:"fill,omitempty"`
	// Pause waits that long (under the loads running: a window that
	// measures them).
	Pause    time.Duration `yaml:"pause,omitempty" json:"pause_ns,omitempty"`
	Reassign *Reassign     `yaml:"reassign,omitempty" json:"reassign,omitempty"`
	Churn    *Churn        `yaml:"churn,omitempty" json:"churn,omitempty"`
	Settle   *Settle       `yaml:"settle,omitempty" json:"settle,omitempty"`
	Groups   *Groups       `yaml:"groups,omitempty" json:"groups,omitempty"`
	Ingest   *Ingest       `yaml:"ingest,omitempty" json:"ingest,omitempty"`
	BeginTxn *BeginTxn     `yaml:"begin_txn,omitempty" json:"begin_txn,omitempty"`
	EndTxn   *EndTxn       `yaml:"end_txn,omitempty" json:"end_txn,omitempty"`
	// The faults that a heal ends (see Fault and Heal).
	Freeze         *Fault          `yaml:"freeze,omitempty" json:"freeze,omitempty"`
	Isolate        *Fault          `yaml:"isolate,omitempty" json:"isolate,omitempty"`
	Cut            *Fault          `yaml:"cut,omitempty" json:"cut,omitempty"`
	FillDisk       *Fault          `yaml:"fill_disk,omitempty" json:"fill_disk,omitempty"`
	Heal           *Heal           `yaml:"heal,omitempty" json:"heal,omitempty"`
	RollingRestart *RollingRestart `yaml:"rolling_restart,omitempty" json:"rolling_restart,omitempty"`
}

// Kind is the step's kind: the field that is set.
func (s Step) Kind() string {
	kinds := []struct {
		set  bool
		name string
	}{
		{s.Produce != nil, "produce"}, {s.Consume != nil, "consume"}, {s.CreateTopic != nil, "create_topic"},
		{s.Kill != nil, "kill"}, {s.Stop != nil, "stop"}, {s.Restart != nil, "restart"}, {s.Wait != nil, "wait"},
		{s.Load != nil, "load"}, {s.Track != nil, "track"}, {s.Fill != nil, "fill"}, {s.Pause > 0, "pause"},
		{s.Reassign != nil, "reassign"}, {s.Churn != nil, "churn"}, {s.Settle != nil, "settle"}, {s.Groups != nil, "groups"},
		{s.Ingest != nil, "ingest"}, {s.BeginTxn != nil, "begin_txn"}, {s.EndTxn != nil, "end_txn"},
		{s.Freeze != nil, "freeze"}, {s.Isolate != nil, "isolate"}, {s.Cut != nil, "cut"},
		{s.FillDisk != nil, "fill_disk"}, {s.Heal != nil, "heal"}, {s.RollingRestart != nil, "rolling_restart"},
	}
	for _, k := range kinds {
		if k.set {
			return k.name
		}
	}
	return ""
}

// Prefix is what the step's figures are named after.
func (s Step) Prefix() string {
	if s.As != "" {
		return s.As
	}
	return s.Kind()
}

// Produce writes records to the cell's last topic (or the one the runner
// makes). Figures: records, batches (acknowledged, a record batch per
// partition per request), bytes, records_per_s, mb_per_s, ack_p50_s,
// ack_p99_s, ack_p999_s, ack_max_s, rate_per_s and behind_s (an open
// loop's rate, and how far it fell behind its schedule); and what the
// servers spent meanwhile:
// server_cpu_s (user and system, every broker process) and
// device_flushes (the flush requests the data's block device completed).
// With Transaction, records, bytes and their rates count the committed
// transactions' records, and it adds txns, aborted_txns, aborted_records,
// txn_p50_s and txn_p99_s (from the transaction's begin to its commit
// answered), end_p50_s and end_p99_s (EndTxn alone).
type Produce struct {
	// Records to produce; or, when 0, produce for Duration.
	Records  int64         `yaml:"records,omitempty" json:"records,omitempty"`
	Duration time.Duration `yaml:"duration,omitempty" json:"duration_ns,omitempty"`
	// RecordBytes is each value's size (default 100).
	RecordBytes int    `yaml:"record_bytes,omitempty" json:"record_bytes,omitempty"`
	Acks        string `yaml:"acks,omitempty" json:"acks,omitempty"`
	Idempotent  bool   `yaml:"idempotent,omitempty" json:"idempotent,omitempty"`
	// InFlight bounds records not yet acknowledged (closed loop); 0 is
	// franz-go's default.
	InFlight int `yaml:"in_flight,omitempty" json:"in_flight,omitempty"`
	// Rate in records per second makes the loop open; 0 is closed.
	Rate float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	// RateOf sets Rate from a figure measured before, on the same server.
	RateOf  *RateOf `yaml:"rate_of,omitempty" json:"rate_of,omitempty"`
	Clients int     `yaml:"clients,omitempty" json:"clients,omitempty"`
	// Linger is the producer's linger (0: franz-go's 10 ms); Warmup
	// leaves the first of the run out of the latency figures.
	Linger time.Duration `yaml:"linger,omitempty" json:"linger_ns,omitempty"`
	Warmup time.Duration `yaml:"warmup,omitempty" json:"warmup_ns,omitempty"`
	// MetadataMinAge is the clients' shortest time between two metadata
	// refreshes (0: franz-go's 5 s), which a retried produce waits for.
	MetadataMinAge time.Duration `yaml:"metadata_min_age,omitempty" json:"metadata_min_age_ns,omitempty"`
	// Transaction makes every client a transactional producer (closed
	// loop, idempotent).
	Transaction *Transaction `yaml:"transaction,omitempty" json:"transaction,omitempty"`
}

// Transaction is how a transactional producer writes: Records a
// transaction, every AbortEvery-th transaction of a client aborted
// instead of committed (0: none). Each client has a transactional id of
// its own.
type Transaction struct {
	Records    int `yaml:"records" json:"records"`
	AbortEvery int `yaml:"abort_every,omitempty" json:"abort_every,omitempty"`
}

// BeginTxn begins a transaction on a new transactional producer
// (transactional id "bench-txn", retrying as fast as the cluster steps'
// clients do, seeded with every running broker but the id's coordinator)
// and writes Records of RecordBytes to the cell's last topic in it,
// returning once every one is acknowledged.
// The transaction stays open for the steps after it (a fault) until an
// EndTxn. Figure: records.
type BeginTxn struct {
	Records     int64 `yaml:"records" json:"records"`
	RecordBytes int   `yaml:"record_bytes,omitempty" json:"record_bytes,omitempty"`
}

// EndTxn commits the transaction a BeginTxn left open, or with Abort
// aborts it; after a fault its since_fault_s is the time from the signal
// to the answer.
type EndTxn struct {
	Abort bool `yaml:"abort,omitempty" json:"abort,omitempty"`
}

// RateOf is Times the median of Figure in an earlier cell on the same
// server (a cell with fewer repetitions runs in the last ones, after the
// cells it reads).
type RateOf struct {
	Cell   string  `yaml:"cell" json:"cell"`
	Figure string  `yaml:"figure" json:"figure"`
	Times  float64 `yaml:"times" json:"times"`
}

// Ingest is the engine's bulk ingest in this process (the engines
// profile's measurement, of Records), beside its server. Figures:
// bytes_per_s, records_per_s.
type Ingest struct {
	Records int64 `yaml:"records,omitempty" json:"records,omitempty"`
}

// Consume reads the cell's topic from the start, every record produced
// before it (with ReadCommitted, at isolation level read_committed: every
// record of a committed transaction, or of no transaction). Figures:
// records, records_per_s, mb_per_s.
type Consume struct {
	ReadCommitted bool `yaml:"read_committed,omitempty" json:"read_committed,omitempty"`
}

// CreateTopic creates a topic on a cluster and waits until every
// partition has a running leader. With Retry it sends CreateTopics
// straight to the running brokers in turn, 10 ms apart, until one accepts
// it (a controller failover; figure: attempts). With Served it sends it
// to the round's broker in turn and waits until every broker the topic is
// placed on lists it with a leader for every partition, then until a
// record produced to every partition is acknowledged with acks=1 and with
// acks=all (figures from the request: created_s, listed_s, leader_ack_s,
// acked_s). Topics above 1 creates that many in requests of 25 (a setup
// of many partitions). The topics a cell creates are the ones later steps
// use: the last one for wait and for the leader fault, all of them for
// what a faulted node led.
type CreateTopic struct {
	Topics            int   `yaml:"topics,omitempty" json:"topics,omitempty"`
	Partitions        int32 `yaml:"partitions,omitempty" json:"partitions,omitempty"`
	ReplicationFactor int16 `yaml:"replication_factor,omitempty" json:"replication_factor,omitempty"`
	// Assignment places partition i on the brokers Assignment[i] names,
	// the first its preferred leader (instead of Partitions and
	// ReplicationFactor).
	Assignment [][]int32 `yaml:"assignment,omitempty" json:"assignment,omitempty"`
	Retry      bool      `yaml:"retry,omitempty" json:"retry,omitempty"`
	Served     bool      `yaml:"served,omitempty" json:"served,omitempty"`
}

// Fault picks the nodes of a cluster a fault hits. Node is "controller"
// (the active one), "other" (a broker other than the active controller,
// in turn over the rounds), "leader" (the leader of partition 0 of the
// last topic), "follower" (a follower of partition 0 that leads nothing
// if there is one), "all" (every broker) or "transaction_coordinator"
// (the coordinator FindCoordinator names for the transactional id of
// BeginTxn's producer). The step says what it does to them: kill
// (SIGKILL), stop (SIGTERM, a controlled shutdown, waiting for the exit),
// freeze (SIGSTOP), isolate (cut off from the other brokers, clients still
// reach it; topology.netns), cut (cut off from everyone; topology.netns)
// or fill_disk (its filesystem written full; topology.disk_bytes).
// Figures: node, led (partitions it led of the cell's topics),
// was_controller (1 when it was the active controller). While a tracked
// producer runs, every step after a fault adds gap_since_fault_s, the
// longest gap between two acknowledgements of a partition since it.
type Fault struct {
	Node string `yaml:"node" json:"node"`
}

// Restart starts the node the last fault ended again, on its directory
// and ports: once the cluster fenced its last registration, then until
// every node lists every broker. With Served the step's figure s runs
// from the exec until the node's own Metadata lists it and a record
// produced to a partition it led before the fault is acknowledged
// (listed_s, open_files beside it). With ISR it waits, from the exec,
// until every broker is listed (listed_s) and the node is back in every
// ISR of the cell's last topic (isr_s), and how fast it caught up with
// what was produced while it was down (caught_up_bytes_per_s).
type Restart struct {
	Served bool `yaml:"served,omitempty" json:"served,omitempty"`
	ISR    bool `yaml:"isr,omitempty" json:"isr,omitempty"`
}

// Heal ends the last fault: a killed or stopped node started again once
// fenced (every one at once after kill all), a frozen one sent SIGCONT, an
// isolated or cut one connected again, a filled disk freed (and its
// broker, if the full disk made it exit, started again, as a supervisor
// would). Every step after it adds since_heal_s. While a tracked producer
// runs it adds victim_acks, the acknowledgements the nodes gave from the
// fault to the heal of partitions they led, and victim_last_ack_s, the
// last of them from the fault (a cut-off leader must stop within its
// session timeout).
type Heal struct{}

// RollingRestart stops every broker in turn with SIGTERM and starts it
// again, each once every ISR of the last topic is full; with Upgrade the
// brokers start again on this build (topology.upgrade). It counts as a
// fault of every broker for the steps after it.
type RollingRestart struct {
	Upgrade bool `yaml:"upgrade,omitempty" json:"upgrade,omitempty"`
}

// Pump (the step load:) starts a closed-loop acks=all producer on the cell's last topic
// that runs until the round ends, keeping InFlight records of RecordBytes
// in flight (bench/load.Pump). Every step while it runs adds
// load_records_per_s, its acknowledgements per second over the step; on
// a cluster also stored_per_s, how fast one copy of the topic grew on the
// brokers' disks (DescribeLogDirs, over the replication factor).
type Pump struct {
	RecordBytes int `yaml:"record_bytes" json:"record_bytes"`
	InFlight    int `yaml:"in_flight" json:"in_flight"`
}

// Track starts an idempotent acks=all producer at Rate records a second
// on the cell's last topic that keeps where every record was acknowledged
// (bench/load.Tracked). Every step while it runs adds longest_gap_s, the
// longest time between two acknowledgements of one partition in the step
// (with gap_partition, and gap_from_s and gap_to_s from the step's
// start). When the round ends the topic is read back: audit.acked,
// audit.lost, audit.duplicated, audit.misplaced. With Read a consumer
// reads the topic all along too, and its polls are checked against the
// log read back: audit.nonmonotonic (an offset read after a greater one),
// audit.poll_skips (records of the log skipped between two polled
// offsets), audit.read_mismatches (an offset read holding another record
// than at the end); audit.anomalies adds up every count but acked.
type Track struct {
	Rate        float64 `yaml:"rate" json:"rate"`
	RecordBytes int     `yaml:"record_bytes" json:"record_bytes"`
	Read        bool    `yaml:"read,omitempty" json:"read,omitempty"`
}

func (p *Produce) txn() *Transaction {
	if p == nil {
		return nil
	}
	return p.Transaction
}

// Fill waits until the Load producer had Bytes of values acknowledged.
type Fill struct {
	Bytes int64 `yaml:"bytes" json:"bytes"`
}

// Reassign moves every partition of the cell's last topic that has a
// replica on broker From to broker To in one AlterPartitionReassignments
// (KIP-455), and waits until no reassignment is listed and every
// partition shows its target with a full ISR. With Throttle the move is
// throttled as kafka-reassign-partitions --throttle does, at Throttle
// times the stored_per_s of the step before it, and the throttle is
// removed after. Figures: moved_bytes (what Load had acknowledged at the
// request), stored_bytes (one copy on disk then), throttle_bytes_per_s.
type Reassign struct {
	From     int32   `yaml:"from" json:"from"`
	To       int32   `yaml:"to" json:"to"`
	Throttle float64 `yaml:"throttle,omitempty" json:"throttle,omitempty"`
}

// Churn forms a group of Members franz-go consumers of the cell's topic
// with Balancer (cooperative-sticky or range), lets it settle, adds one
// more member and counts the partitions whose owner changed. Figures:
// moved, and settle_s from the new member's start until the group is
// Stable again with every partition owned.
type Churn struct {
	Members  int    `yaml:"members" json:"members"`
	Balancer string `yaml:"balancer" json:"balancer"`
}

// Settle starts Members consumers of the cell's topic at once. Figure:
// settle_s, from the last JoinGroup any of them wrote until the group is
// Stable with every partition owned, polled every 2 ms.
type Settle struct {
	Members int `yaml:"members" json:"members"`
}

// Groups starts Count one-member groups on one client, each sending a
// heartbeat every Heartbeat and an offset commit every Commit (franz-go's
// defaults are 3 s and 5 s), until the round ends. Every step while they
// run adds group_requests_per_s.
type Groups struct {
	Count     int           `yaml:"count" json:"count"`
	Heartbeat time.Duration `yaml:"heartbeat" json:"heartbeat_ns"`
	Commit    time.Duration `yaml:"commit" json:"commit_ns"`
}

// Wait polls until a condition holds: Fenced, every running broker
// leaves the last faulted node out of its Metadata, as a broker and as a
// leader of the last topic; ISR, every partition of the last topic (or of
// Topic, an internal one say) has that many replicas in sync; Acked, the
// tracked producer had a record acknowledged since the last fault on a
// partition the fault hit (by another broker when the faulted node led
// it, until a heal), figure first_ack_s from the fault to that
// acknowledgement;
// Progress, every partition of the tracked producer's topic acknowledged
// since the last heal.
type Wait struct {
	Fenced   bool   `yaml:"fenced,omitempty" json:"fenced,omitempty"`
	ISR      int    `yaml:"isr,omitempty" json:"isr,omitempty"`
	Topic    string `yaml:"topic,omitempty" json:"topic,omitempty"`
	Acked    bool   `yaml:"acked,omitempty" json:"acked,omitempty"`
	Progress bool   `yaml:"progress,omitempty" json:"progress,omitempty"`
}

// Column is a figure in a cell's table: its median [min–max] over the
// repetitions; with Stat, that statistic alone; with Over, its median over
// the Over server's (in OverCell, when set: another cell's on the same
// server); with Per, the figure over another figure of the same
// repetition.
type Column struct {
	Figure   string `yaml:"figure" json:"figure"`
	Per      string `yaml:"per,omitempty" json:"per,omitempty"`
	Stat     string `yaml:"stat,omitempty" json:"stat,omitempty"`
	Over     string `yaml:"over,omitempty" json:"over,omitempty"`
	OverCell string `yaml:"over_cell,omitempty" json:"over_cell,omitempty"`
	// Label is the column's header (default: the figure's name in words).
	Label string `yaml:"label,omitempty" json:"label,omitempty"`
}

// UnmarshalYAML takes a bare figure name as a column too.
func (c *Column) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		c.Figure = n.Value
		return nil
	}
	type plain Column
	return n.Decode((*plain)(c))
}

// Target is a figure against a bound.
type Target struct {
	// Name says what is judged; the server is added to it.
	Name string `yaml:"name" json:"name"`
	// Cell is the one judged; Cells, in a file, makes a target of each.
	Cell  string   `yaml:"cell,omitempty" json:"cell"`
	Cells []string `yaml:"cells,omitempty" json:"-"`
	// Server is the one judged; Servers, in a file, makes a target of
	// each.
	Server  string   `yaml:"server,omitempty" json:"server"`
	Servers []string `yaml:"servers,omitempty" json:"-"`
	Figure  string   `yaml:"figure" json:"figure"`
	// Per divides the figure by another of the same repetition.
	Per string `yaml:"per,omitempty" json:"per,omitempty"`
	// Stat is median (the default), p50, p90, p99, min or max over the
	// repetitions.
	Stat string `yaml:"stat,omitempty" json:"stat,omitempty"`
	// Over divides by the same statistic on this server; OverCell, by the
	// same statistic in that cell (on Over, or on the same server).
	Over     string `yaml:"over,omitempty" json:"over,omitempty"`
	OverCell string `yaml:"over_cell,omitempty" json:"over_cell,omitempty"`
	// Paired divides repetition by repetition (the i-th finished one by
	// Over's i-th, which a run measures within minutes of each other) and
	// takes Stat of those ratios: min says "in every repetition".
	Paired  bool     `yaml:"paired,omitempty" json:"paired,omitempty"`
	AtLeast *float64 `yaml:"at_least,omitempty" json:"at_least,omitempty"`
	AtMost  *float64 `yaml:"at_most,omitempty" json:"at_most,omitempty"`
	// Gate makes a drop of this ratio fail cmd/benchcheck.
	Gate bool `yaml:"gate,omitempty" json:"gate,omitempty"`
}

// Bound is the target's bound and whether it is a lower one.
func (t Target) Bound() (bound float64, atLeast bool) {
	if t.AtLeast != nil {
		return *t.AtLeast, true
	}
	return *t.AtMost, false
}

// Names lists the embedded workloads.
func Names() []string {
	entries, _ := fs.Glob(files, "*.yaml")
	for i, e := range entries {
		entries[i] = strings.TrimSuffix(e, ".yaml")
	}
	return entries
}

// ErrUnknown: no embedded workload has that name.
var ErrUnknown = errors.New("workloads: unknown workload")

// Load reads the embedded workload called name, or, when name ends in
// .yaml, the file at that path.
func Load(name string) (*Workload, error) {
	var data []byte
	var err error
	if strings.HasSuffix(name, ".yaml") {
		data, err = os.ReadFile(name)
	} else if data, err = files.ReadFile(name + ".yaml"); errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("%w %q: want one of %s", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	if err != nil {
		return nil, err
	}
	w, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("workloads: %s: %w", name, err)
	}
	if w.Name == "" {
		w.Name = strings.TrimSuffix(filepath.Base(name), ".yaml")
	}
	return w, nil
}

// Parse decodes and checks a workload.
func Parse(data []byte) (*Workload, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var w Workload
	if err := dec.Decode(&w); err != nil {
		return nil, err
	}
	w.defaults()
	return &w, w.check()
}

// TopologyOf is the topology cell c runs on: the workload's with the
// cell's overrides.
func (w *Workload) TopologyOf(c Cell) Topology {
	t := w.Topology
	if o := c.Topology; o != nil {
		if o.Brokers > 0 {
			t.Brokers = o.Brokers
		}
		if o.Sync != "" {
			t.Sync = o.Sync
		}
		if o.Partitions > 0 {
			t.Partitions = o.Partitions
		}
		if o.BrokerArgs != nil {
			t.BrokerArgs = o.BrokerArgs
		}
		t.Netns = t.Netns || o.Netns
		t.DiskBytes = max(t.DiskBytes, o.DiskBytes)
		t.Upgrade = t.Upgrade || o.Upgrade
	}
	return t
}

func (w *Workload) defaults() {
	w.Targets = expand(w.Targets, func(t *Target) *[]string { return &t.Cells }, func(t *Target, c string) {
		t.Cell = c
		if len(t.Cells) > 1 {
			t.Name = c + ": " + t.Name
		}
	})
	w.Targets = expand(w.Targets, func(t *Target) *[]string { return &t.Servers }, func(t *Target, srv string) { t.Server = srv })
	w.Reps = max(w.Reps, 1)
	if w.Quick.Divide <= 0 {
		w.Quick.Divide = 10
	}
	if w.Topology.Sync == "" {
		w.Topology.Sync = "always"
	}
	if w.Topology.Partitions <= 0 {
		w.Topology.Partitions = 8
	}
	for i := range w.Cells {
		c := &w.Cells[i]
		if len(c.Servers) == 0 {
			c.Servers = w.Servers
		}
		if c.Reps <= 0 {
			c.Reps = w.Reps
		}
		c.Rounds = max(c.Rounds, 1)
		for _, s := range append(slices.Clone(c.Setup), c.Steps...) {
			if s.Produce != nil && s.Produce.RecordBytes <= 0 {
				s.Produce.RecordBytes = 100
			}
			if s.BeginTxn != nil && s.BeginTxn.RecordBytes <= 0 {
				s.BeginTxn.RecordBytes = 100
			}
		}
	}
}

// expand makes a target of each value of the list field names in a
// target (set by set), leaving a target without one as it is.
func expand(ts []Target, field func(*Target) *[]string, set func(*Target, string)) []Target {
	var out []Target
	for _, t := range ts {
		vs := *field(&t)
		for _, v := range vs {
			e := t
			set(&e, v)
			out = append(out, e)
		}
		if len(vs) == 0 {
			out = append(out, t)
		}
	}
	return out
}

func (w *Workload) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if w.Reference != "" && !slices.Contains(w.Servers, w.Reference) {
		bad("reference %q is not among the servers", w.Reference)
	}
	for _, c := range w.Cells {
		if len(c.Steps) == 0 {
			bad("cell %q: no steps", c.Name)
		}
		for i, s := range append(slices.Clone(c.Setup), c.Steps...) {
			if s.Kind() == "" {
				bad("cell %q: step %d: no kind", c.Name, i+1)
			}
			if s.Ingest != nil && s.Ingest.Records <= 0 {
				bad("cell %q: step %d: ingest of no records", c.Name, i+1)
			}
			if t := s.Produce.txn(); t != nil && (t.Records <= 0 || t.AbortEvery < 0) {
				bad("cell %q: step %d: transactions of %d records, aborting every %d", c.Name, i+1, t.Records, t.AbortEvery)
			}
			if s.BeginTxn != nil && s.BeginTxn.Records <= 0 {
				bad("cell %q: step %d: begin_txn of no records", c.Name, i+1)
			}
		}
	}
	for _, ch := range w.Charts {
		if w.Cell(ch.Cell) == nil || len(ch.Figures) == 0 {
			bad("chart %q: no cell %q or no figures", ch.File, ch.Cell)
		}
	}
	for _, t := range w.Targets {
		c := w.Cell(t.Cell)
		switch {
		case c == nil:
			bad("target %q: no cell %q", t.Name, t.Cell)
		case !slices.Contains(c.Servers, t.Server):
			bad("target %q: cell %q does not run on %q", t.Name, t.Cell, t.Server)
		case t.Over != "" && !slices.Contains(c.Servers, t.Over):
			bad("target %q: cell %q does not run on %q", t.Name, t.Cell, t.Over)
		case t.OverCell != "" && w.Cell(t.OverCell) == nil:
			bad("target %q: no cell %q", t.Name, t.OverCell)
		case (t.AtLeast == nil) == (t.AtMost == nil):
			bad("target %q: want one of at_least and at_most", t.Name)
		}
		if _, ok := StatQuantile(t.Stat); !ok {
			bad("target %q: stat %q: want median, p50, p90, p99, min or max", t.Name, t.Stat)
		}
	}
	for _, c := range w.Cells {
		for _, col := range c.Columns {
			if _, ok := StatQuantile(col.Stat); !ok {
				bad("cell %q: column %s: stat %q: want median, p50, p90, p99, min or max", c.Name, col.Figure, col.Stat)
			}
		}
	}
	return errors.Join(errs...)
}

// StatQuantile is the quantile a target's statistic reads (median 0.5,
// min 0, max 1), and whether the statistic is known.
func StatQuantile(stat string) (float64, bool) {
	switch stat {
	case "", "median", "p50":
		return 0.5, true
	case "p90":
		return 0.9, true
	case "p99":
		return 0.99, true
	case "min":
		return 0, true
	case "max":
		return 1, true
	}
	return 0, false
}

// Cell is the cell called name, or nil.
func (w *Workload) Cell(name string) *Cell {
	for i := range w.Cells {
		if w.Cells[i].Name == name {
			return &w.Cells[i]
		}
	}
	return nil
}

// Shrunk is the workload as -quick runs it: one repetition of every cell,
// record counts, durations, pauses, fills, rounds and bulk topics divided
// by Quick.Divide.
func (w *Workload) Shrunk() *Workload {
	q := *w
	d := int64(w.Quick.Divide)
	q.Reps = 1
	q.Cells = slices.Clone(w.Cells)
	for i := range q.Cells {
		c := &q.Cells[i]
		c.Reps, c.Rounds = 1, max(1, c.Rounds/int(d))
		c.Setup, c.Steps = shrink(c.Setup, d), shrink(c.Steps, d)
	}
	return &q
}

func shrink(steps []Step, d int64) []Step {
	steps = slices.Clone(steps)
	for j := range steps {
		if p := steps[j].Produce; p != nil {
			shrunk := *p
			shrunk.Records /= d
			shrunk.Duration /= time.Duration(d)
			shrunk.Warmup /= time.Duration(d)
			steps[j].Produce = &shrunk
		}
		if in := steps[j].Ingest; in != nil {
			steps[j].Ingest = &Ingest{Records: in.Records / d}
		}
		if f := steps[j].Fill; f != nil {
			steps[j].Fill = &Fill{Bytes: f.Bytes / d}
		}
		steps[j].Pause /= time.Duration(d)
		if ct := steps[j].CreateTopic; ct != nil && ct.Topics > 1 {
			shrunk := *ct
			shrunk.Topics = max(2, ct.Topics/int(d))
			steps[j].CreateTopic = &shrunk
		}
	}
	return steps
}
