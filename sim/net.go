package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// The network carries every message between nodes (brokers 1..N, clients
// from clientBase): each send is delivered after a delay drawn in
// [DelayMin, DelayMax] (so messages reorder), or dropped, or delivered
// twice, by the run's rates; a clogged link drops everything sent on it.
// Partitions clog links: symmetric (two sides), asymmetric (one
// direction), and swizzle-clog (FoundationDB: links clogged one by one,
// then unclogged in random order). A stall holds links instead: nothing
// sent on them is lost, everything arrives late, when they move again (a
// TCP connection through a congested switch or a NIC reset: requests built
// from a state long gone reach a receiver that has moved on).

const clientBase = 100

type link struct{ from, to int32 }

type network struct {
	s     *Sim
	rng   *rand.Rand
	clog  map[link]bool
	stall map[link]int64 // until when a link holds what is sent on it
	// metaStall holds only the metadata a link carries (raft messages):
	// one connection of a pair congested, the others flowing, so that a
	// broker's metadata lags while it fetches and is fetched from.
	metaStall map[link]int64
	nodes     []int32 // every node id, sorted
	healed    bool    // the liveness phase: no drops, no duplicates
}

func newNetwork(s *Sim, rng *rand.Rand) *network {
	return &network{s: s, rng: rng, clog: map[link]bool{}, stall: map[link]int64{}, metaStall: map[link]int64{}}
}

func (n *network) clogged(from, to int32) bool { return n.clog[link{from, to}] }

// send carries msg from one node to another; deliver runs at the receiver.
func (n *network) send(from, to int32, kind string, deliver func()) bool {
	o := &n.s.opts
	if from == to {
		n.s.at(0, kind, deliver)
		return true
	}
	if n.clog[link{from, to}] || (!n.healed && n.rng.IntN(100) < o.DropPct) {
		n.s.stats.Dropped++
		return false
	}
	copies := 1
	if !n.healed && n.rng.IntN(100) < o.DupPct {
		copies = 2
		n.s.stats.Duplicated++
	}
	hold := max(n.stall[link{from, to}]-n.s.now, 0)
	if kind == "raft" {
		hold = max(hold, n.metaStall[link{from, to}]-n.s.now)
	}
	for range copies {
		d := hold + o.DelayMin + n.rng.Int64N(o.DelayMax-o.DelayMin+1)
		n.s.stats.Messages++
		n.s.at(d, kind, func() {
			// A message that arrives while its link is clogged is lost too.
			if n.clog[link{from, to}] {
				n.s.stats.Dropped++
				return
			}
			deliver()
		})
	}
	return true
}

// brokerIDs are 1..N.
func (n *network) brokerIDs() []int32 {
	var ids []int32
	for _, id := range n.nodes {
		if id < clientBase {
			ids = append(ids, id)
		}
	}
	return ids
}

// partition applies one partition fault, drawn from the three kinds, and
// schedules its healing.
func (n *network) partition() {
	ids := n.brokerIDs()
	if len(ids) < 2 {
		return
	}
	heal := 200 + n.rng.Int64N(2000)
	switch n.rng.IntN(3) {
	case 0: // symmetric: a random side against the rest, clients split too
		side := n.randomSide(ids)
		n.s.stats.Faults["partition-symmetric"]++
		n.s.tracef("partition symmetric %v", side)
		for _, a := range n.nodes {
			for _, b := range n.nodes {
				if slices.Contains(side, a) != slices.Contains(side, b) && (a < clientBase || b < clientBase) {
					n.clog[link{a, b}] = true
				}
			}
		}
		n.s.at(heal, "heal", n.healAll)
	case 1: // asymmetric: one side hears the other, not the other way
		side := n.randomSide(ids)
		n.s.stats.Faults["partition-asymmetric"]++
		n.s.tracef("partition asymmetric %v", side)
		for _, a := range side {
			for _, b := range n.nodes {
				if !slices.Contains(side, b) {
					n.clog[link{a, b}] = true
				}
			}
		}
		n.s.at(heal, "heal", n.healAll)
	case 2: // swizzle-clog
		n.s.stats.Faults["partition-swizzle"]++
		n.swizzle(ids)
	}
}

// stallLinks stalls the links from a random side of the brokers to every
// other node, and back unless the stall is one-way, for a while.
func (n *network) stallLinks() {
	ids := n.brokerIDs()
	if len(ids) < 2 {
		return
	}
	side := n.randomSide(ids)
	until := n.s.now + 200 + n.rng.Int64N(2500)
	oneWay := n.rng.IntN(2) == 0
	n.s.stats.Faults["stall"]++
	n.s.tracef("stall %v until %d (one-way %v)", side, until, oneWay)
	hold := func(l link) { n.stall[l] = max(n.stall[l], until) }
	for _, a := range side {
		for _, b := range n.nodes {
			if slices.Contains(side, b) {
				continue
			}
			hold(link{a, b})
			if !oneWay {
				hold(link{b, a})
			}
		}
	}
}

// stallMetadata holds the metadata to and from one broker for a while:
// its image lags while its data links flow.
func (n *network) stallMetadata() {
	ids := n.brokerIDs()
	if len(ids) < 2 {
		return
	}
	b := ids[n.rng.IntN(len(ids))]
	until := n.s.now + 300 + n.rng.Int64N(2500)
	n.s.stats.Faults["metadata-stall"]++
	n.s.tracef("metadata stall b%d until %d", b, until)
	for _, o := range ids {
		if o != b {
			n.metaStall[link{b, o}] = max(n.metaStall[link{b, o}], until)
			n.metaStall[link{o, b}] = max(n.metaStall[link{o, b}], until)
		}
	}
}

// randomSide is a non-empty proper subset of ids.
func (n *network) randomSide(ids []int32) []int32 {
	for {
		var side []int32
		for _, id := range ids {
			if n.rng.IntN(2) == 0 {
				side = append(side, id)
			}
		}
		if len(side) > 0 && len(side) < len(ids) {
			return side
		}
	}
}

// swizzle clogs the links between brokers one at a time, then unclogs
// them in another random order.
func (n *network) swizzle(ids []int32) {
	var links []link
	for _, a := range ids {
		for _, b := range ids {
			if a != b {
				links = append(links, link{a, b})
			}
		}
	}
	n.rng.Shuffle(len(links), func(i, j int) { links[i], links[j] = links[j], links[i] })
	links = links[:1+n.rng.IntN(len(links))]
	n.s.tracef("swizzle %d links", len(links))
	var t int64
	for _, l := range links {
		t += 20 + n.rng.Int64N(100)
		n.s.at(t, "clog", func() { n.clog[l] = true })
	}
	order := slices.Clone(links)
	n.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for _, l := range order {
		t += 20 + n.rng.Int64N(200)
		n.s.at(t, "unclog", func() { delete(n.clog, l) })
	}
}

// healAll ends every partition and stall (what a stall holds still
// arrives when it was due).
func (n *network) healAll() {
	clear(n.clog)
	clear(n.stall)
	clear(n.metaStall)
}

func (l link) String() string { return fmt.Sprintf("%d->%d", l.from, l.to) }
