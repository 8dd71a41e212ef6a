package replication

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The scenario harness: one partition on brokers 1..n, each a node with an
// in-memory log, a crash model and the state machine of its role; a
// controller (controller_test.go); and commands that move every message by
// hand, so that a scenario is exactly the interleaving it names.
//
// Commands (see TestScenarios for the list) print what each state machine
// did, one line per action, prefixed by the node: n1 for broker 1, ctl for
// the controller. A produced batch is m<k>; "m3@4-5e2" is m3 at offsets 4
// to 5 written in leader epoch 2.

// record is a batch in a node's log.
type record struct {
	base, last int64
	epoch      int32
	label      string
}

func (r record) String() string {
	if r.base == r.last {
		return fmt.Sprintf("%s@%de%d", r.label, r.base, r.epoch)
	}
	return fmt.Sprintf("%s@%d-%de%d", r.label, r.base, r.last, r.epoch)
}

type node struct {
	id          int32
	brokerEpoch int64
	up          bool
	log         []record
	logStart    int64
	// synced is how far the log is on disk: a crash keeps that much.
	synced int64
	// reported is the durable end the state machine was told: synced under
	// sync=always, the log end under sync=never (acknowledged from the page
	// cache, as Kafka does).
	reported  int64
	hw, maxHW int64
	saved     []byte // the epoch cache's checkpoint, written on SaveEpochs
	epochs    *EpochCache
	leader    *Leader
	follower  *Follower
}

func (n *node) end() int64 {
	if len(n.log) == 0 {
		return n.logStart
	}
	return n.log[len(n.log)-1].last + 1
}

func (n *node) at(o int64) (record, bool) {
	for _, r := range n.log {
		if r.base <= o && o <= r.last {
			return r, true
		}
	}
	return record{}, false
}

// keepBelow drops every batch holding an offset at or above o, as an
// engine's Truncate does.
func (n *node) keepBelow(o int64) {
	i := 0
	for i < len(n.log) && n.log[i].last < o {
		i++
	}
	n.log = n.log[:i]
}

func (n *node) logString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[")
	for i, r := range n.log {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(r.String())
	}
	b.WriteString("]")
	return b.String()
}

type inflight struct {
	p    ProposeISR
	from *Leader // results go back only to the Leader that proposed
}

type waiter struct {
	label       string
	base, end   int64
	node        int32
	leaderEpoch int32
}

type harness struct {
	nodes      []*node
	ctl        *controller
	now        time.Time
	lag        time.Duration
	syncAlways bool
	mut        mutations
	out        strings.Builder
	inbox      []inflight // AlterPartition requests on their way to the controller
	waiters    []waiter   // acks=all produces not yet answered
	acked      []waiter
	committed  map[int64]string // offset -> label, once below some leader's HW
	labels     int
}

func (h *harness) printf(format string, args ...any) {
	fmt.Fprintf(&h.out, format, args...)
	h.out.WriteString("\n")
}

func (h *harness) node(t *testing.T, d *datadriven.TestData, id int32) *node {
	if id < 1 || int(id) > len(h.nodes) {
		d.Fatalf(t, "no node %d", id)
	}
	return h.nodes[id-1]
}

// args is a command's arguments: key=value, and a bare number as "node".
type args map[string]string

func parseArgs(d *datadriven.TestData) args {
	a := args{}
	for _, arg := range d.CmdArgs {
		if _, err := strconv.Atoi(arg.Key); err == nil && len(arg.Vals) == 0 {
			a["node"] = arg.Key
			continue
		}
		a[arg.Key] = strings.Join(arg.Vals, ",")
	}
	return a
}

func (a args) has(k string) bool { _, ok := a[k]; return ok }

func (a args) num(t *testing.T, d *datadriven.TestData, k string, def int64) int64 {
	v, ok := a[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d.Fatalf(t, "%s=%q: %v", k, v, err)
	}
	return n
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	h.out.Reset()
	a := parseArgs(d)
	nodeArg := func() *node { return h.node(t, d, int32(a.num(t, d, "node", 0))) }
	switch d.Cmd {
	case "mutate":
		if err := setMutation(&h.mut, d.CmdArgs[0].Key); err != nil {
			d.Fatalf(t, "%v", err)
		}
		h.printf("mutation %s: the rule it protects is off", d.CmdArgs[0].Key)
	case "init":
		h.init(int(a.num(t, d, "replicas", 3)), int(a.num(t, d, "min-isr", 2)), a.num(t, d, "lag", 100), a["sync"] != "never")
	case "produce":
		h.produce(a["acks"] != "1", a.num(t, d, "n", 1))
	case "sync":
		h.sync(nodeArg())
	case "fetch":
		h.fetch(nodeArg(), a.has("drop-response"), int(a.num(t, d, "max", 1<<30)))
	case "late-fetch":
		h.lateFetch(nodeArg(), a.num(t, d, "broker-epoch", -1), a.num(t, d, "offset", 0), int32(a.num(t, d, "last-epoch", -1)))
	case "alter":
		h.alter(t, d, a)
	case "tick":
		h.now = h.now.Add(time.Duration(a.num(t, d, "ms", 0)) * time.Millisecond)
		h.printf("time %dms", h.now.Sub(t0).Milliseconds())
		if n := h.leaderNode(); n != nil {
			h.apply(n, n.leader.Step(Tick{Now: h.now}))
		}
	case "crash":
		h.crash(nodeArg())
	case "restart":
		h.restart(nodeArg(), a.has("empty"), a.has("hold-metadata"))
	case "fence":
		n := nodeArg()
		if h.ctl.fence(n.id) {
			h.printf("ctl fence %d: %s", n.id, h.ctl)
			if !a.has("hold-metadata") {
				h.deliver()
			}
		} else {
			h.printf("ctl fence %d: the partition is unchanged", n.id)
		}
	case "metadata":
		h.deliver()
	case "state":
		h.state()
	case "check":
		h.check()
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	h.resolveWaiters()
	if h.out.Len() == 0 {
		return "ok\n"
	}
	return h.out.String()
}

func (h *harness) init(n, minISR int, lagMs int64, syncAlways bool) {
	h.ctl = newController(n, minISR)
	h.lag = time.Duration(lagMs) * time.Millisecond
	h.syncAlways = syncAlways
	h.now = t0
	h.committed = map[int64]string{}
	h.nodes = nil
	for id := int32(1); id <= int32(n); id++ {
		h.nodes = append(h.nodes, &node{id: id, brokerEpoch: int64(id), up: true, epochs: &EpochCache{}})
	}
	h.printf("ctl %s", h.ctl)
	h.deliver()
}

func (h *harness) leaderNode() *node {
	if h.ctl.leader < 0 {
		return nil
	}
	n := h.nodes[h.ctl.leader-1]
	if !n.up || n.leader == nil {
		return nil
	}
	return n
}

func (h *harness) produce(acksAll bool, count int64) {
	n := h.leaderNode()
	if n == nil {
		h.printf("produce: no leader")
		return
	}
	acks := int16(1)
	if acksAll {
		acks = -1
	}
	if err := n.leader.CheckProduce(acks); err != nil {
		h.printf("produce: %s", errString(err))
		return
	}
	r := record{base: n.end(), last: n.end() + count - 1, epoch: n.leader.LeaderEpoch(), label: fmt.Sprintf("m%d", h.labels)}
	h.labels++
	n.log = append(n.log, r)
	h.printf("n%d append %s", n.id, r)
	h.apply(n, n.leader.Step(LocalAppended{End: n.end()}))
	if !h.syncAlways {
		n.reported = n.end()
		h.apply(n, n.leader.Step(LocalDurable{End: n.end()}))
	}
	if acksAll {
		h.waiters = append(h.waiters, waiter{label: r.label, base: r.base, end: r.last + 1, node: n.id, leaderEpoch: r.epoch})
	}
}

func (h *harness) sync(n *node) {
	if !n.up {
		h.printf("n%d is down", n.id)
		return
	}
	n.synced = n.end()
	h.printf("n%d synced to %d", n.id, n.synced)
	if !h.syncAlways {
		return // the state machines were told at the append
	}
	n.reported = n.synced
	switch {
	case n.leader != nil:
		h.apply(n, n.leader.Step(LocalDurable{End: n.synced}))
	case n.follower != nil:
		h.apply(n, n.follower.Step(LocalDurable{End: n.synced}))
	}
}

// fetch moves one fetch from follower n to its leader and the answer back.
func (h *harness) fetch(n *node, dropResponse bool, maxBatches int) {
	if !n.up || n.follower == nil {
		h.printf("n%d is not following", n.id)
		return
	}
	req, ok := n.follower.NextFetch()
	if !ok {
		s := n.follower.State()
		why := "sync pending"
		if s.Stale != nil {
			why = "stale: " + errString(s.Stale)
		}
		h.printf("n%d no fetch: %s", n.id, why)
		return
	}
	h.printf("n%d fetch from n%d offset=%d last-epoch=%d epoch=%d", n.id, req.Leader, req.FetchOffset, req.LastFetchedEpoch, req.CurrentLeaderEpoch)
	ln := h.nodes[req.Leader-1]
	resp := FetchResponse{FetchOffset: req.FetchOffset}
	switch {
	case !ln.up:
		h.printf("n%d is down: no answer", ln.id)
		return
	case ln.leader == nil:
		// Not leading: the shell's own epoch check, else not the leader.
		resp.Err = kerr.NotLeaderForPartition
		if ln.follower != nil {
			if err := CheckLeaderEpoch(req.CurrentLeaderEpoch, ln.follower.State().LeaderEpoch); err != nil {
				resp.Err = err
			}
		}
		h.printf("n%d answer %s", ln.id, errString(resp.Err))
	default:
		acts := ln.leader.Step(FollowerFetch{Replica: req.Replica, BrokerEpoch: req.BrokerEpoch, CurrentLeaderEpoch: req.CurrentLeaderEpoch,
			FetchOffset: req.FetchOffset, LastFetchedEpoch: req.LastFetchedEpoch, Now: h.now})
		ans := acts[0].(FetchAnswer)
		resp.Err, resp.DivergingEpoch, resp.HighWatermark, resp.LogStartOffset = ans.Err, ans.Diverging, ans.HighWatermark, ans.LogStartOffset
		if ans.Err == nil && ans.Diverging == nil {
			for _, r := range ln.log {
				if r.last >= ans.From && r.base < ans.To && len(resp.Batches) < maxBatches {
					resp.Batches = append(resp.Batches, BatchInfo{BaseOffset: r.base, LastOffset: r.last, Epoch: r.epoch})
				}
			}
		}
		h.apply(ln, acts)
	}
	if dropResponse {
		h.printf("n%d response lost", n.id)
		return
	}
	h.apply(n, n.follower.Step(resp))
}

// lateFetch delivers to the leader a fetch that n sent long ago, maybe
// from an earlier incarnation; its answer goes nowhere.
func (h *harness) lateFetch(n *node, brokerEpoch, offset int64, lastEpoch int32) {
	ln := h.leaderNode()
	if ln == nil {
		h.printf("no leader")
		return
	}
	h.printf("n%d late fetch from broker epoch %d offset=%d last-epoch=%d", n.id, brokerEpoch, offset, lastEpoch)
	h.apply(ln, ln.leader.Step(FollowerFetch{Replica: n.id, BrokerEpoch: brokerEpoch, CurrentLeaderEpoch: ln.leader.LeaderEpoch(),
		FetchOffset: offset, LastFetchedEpoch: lastEpoch, Now: h.now}))
}

// alter has the controller decide the oldest AlterPartition in flight.
func (h *harness) alter(t *testing.T, d *datadriven.TestData, a args) {
	if len(h.inbox) == 0 {
		h.printf("ctl nothing in flight")
		return
	}
	req := h.inbox[0]
	h.inbox = h.inbox[1:]
	var res AlterPartitionResult
	committed := false
	if name, ok := a["err"]; ok {
		res = AlterPartitionResult{Seq: req.p.Seq, Err: errorNamed(t, d, name)}
		h.printf("ctl alter seq=%d: answered %s (injected)", req.p.Seq, name)
	} else {
		pe := h.ctl.partitionEpoch
		res = h.ctl.alter(req.p)
		committed = res.Err == nil && h.ctl.partitionEpoch != pe
		if res.Err != nil {
			h.printf("ctl alter seq=%d: %s", req.p.Seq, errString(res.Err))
		} else {
			h.printf("ctl alter seq=%d: %s", req.p.Seq, h.ctl)
		}
	}
	if a.has("lose-response") {
		res = AlterPartitionResult{Seq: req.p.Seq, Err: kerr.RequestTimedOut}
		h.printf("ctl response lost: the leader sees %s", errString(res.Err))
	}
	res.Now = h.now
	if n := h.leaderNode(); n != nil && n.leader == req.from {
		h.apply(n, n.leader.Step(res))
	}
	if committed && !a.has("hold-metadata") {
		h.deliver()
	}
}

func (h *harness) crash(n *node) {
	n.up = false
	n.keepBelow(n.synced)
	n.reported = min(n.reported, n.end())
	n.leader, n.follower = nil, nil
	h.printf("n%d crashed: log %s", n.id, n.logString())
}

func (h *harness) restart(n *node, empty, holdMetadata bool) {
	if empty {
		n.log, n.logStart, n.synced, n.hw, n.saved = nil, 0, 0, 0, nil
	}
	n.up = true
	n.reported = n.end()
	n.synced = n.end()
	n.hw = min(n.hw, n.end())
	n.maxHW = n.hw
	n.epochs = recoverEpochs(n)
	changed := h.ctl.register(n.id)
	n.brokerEpoch = h.ctl.brokerEpochs[n.id-1]
	h.printf("n%d restarted: broker epoch %d, log %s, hw %d, epochs %v", n.id, n.brokerEpoch, n.logString(), n.hw, n.epochs.Entries())
	if changed {
		h.printf("ctl %s", h.ctl)
	}
	if !holdMetadata {
		h.deliver()
	}
}

// recoverEpochs is what a shell does at startup: the checkpoint, cut to the
// recovered log, then the batches appended after its latest entry; the
// batch headers alone when there is no good checkpoint.
func recoverEpochs(n *node) *EpochCache {
	batches := func(from int64) func(func(BatchInfo) bool) {
		return func(yield func(BatchInfo) bool) {
			for _, r := range n.log {
				if r.base >= from && !yield(BatchInfo{BaseOffset: r.base, LastOffset: r.last, Epoch: r.epoch}) {
					return
				}
			}
		}
	}
	c, err := UnmarshalEpochCache(n.saved)
	if err != nil {
		return RebuildEpochCache(batches(0))
	}
	c.TruncateFromEnd(n.end())
	from := int64(0)
	if e, ok := c.Latest(); ok {
		from = e.StartOffset
	}
	for b := range batches(from) {
		c.Assign(b.Epoch, b.BaseOffset)
	}
	return c
}
