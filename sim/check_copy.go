package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// copyHistory checks the copiers (copier.go), consume-transform-produce
// clients whose input offsets are committed in their transactions, from
// what they were told and what the cluster shows at the end of the run:
//
//   - exactly-once: every input record below the group's final committed
//     offset of its partition shows in the committed output (what
//     read_committed shows of "tx") exactly once, as the copy of that
//     record, and none at or above it. A transaction that aborted shows
//     nothing (aborted-read says so).
//   - G1a: a transaction started from an offset whose metadata names a
//     transaction its copier saw abort (an offset committed in a
//     transaction became visible without its commit).
//   - G0 and G1c over the committed transactions, after Adya: a cycle of
//     write-write edges, or of write-write and write-read edges.
//
// # What Kafka promises, and so which edges count
//
// Kafka does not make transactions serializable: two producers'
// transactions that run at the same time may write two partitions in
// opposite orders, and both commit (a write cycle, which Jepsen showed
// Kafka itself allows). A partition's log is a total order of its
// appends, and offsets are handed out in the order appends arrive; and a
// transactional id's transactions are sequential, each ended (its
// markers written) before the next one adds a partition. So the checker
// draws an edge between two committed transactions only where one of
// these promises orders them, and any cycle it finds contradicts a
// promise:
//
//   - ww, offsets: two commits of the same group/partition offset key, in
//     the order of their commit markers in the offsets log. Only the
//     copier of that input partition commits its key, so the two are one
//     transactional id's and that order must be the id's own.
//   - ww, output: two transactions' records in the same partition of
//     "tx", in offset order, when both are one copier's (its transactions
//     append in its order) or the first was answered committed before the
//     second began (every record of the first was acknowledged, so
//     appended, before the second sent any). Records of concurrent
//     transactions of two copiers are in no promised order, and draw no
//     edge.
//   - wr: a transaction that started from the offset another committed
//     (the offset's metadata names it) read its write: the writer
//     committed first.
//
// Within one copier every edge must go from an earlier transaction to a
// later one, and across copiers only along real time; a cycle is
// therefore a transaction that both precedes and follows another.
type copyHistory struct {
	txns map[string]*copyTxn
}

// copyTxn is one transaction of a copier.
type copyTxn struct {
	name     string
	part     int32 // the copier's input partition
	from, to int64 // input offsets copied: [from, to)
	readFrom string
	start    int64 // when it began
	end      int64 // when its commit was answered; -1 if not (yet)
	outcome  txnOutcome
}

// copyEnd is what the cluster shows at the end of a run, besides
// read_committed's view of "tx".
type copyEnd struct {
	committed map[int32]int64            // the group's offset, by input partition
	commits   []offsetCommit             // the group's commits, in commit order
	input     map[int32]map[int64]string // the input records, by partition and offset
}

// offsetCommit is one commit of an input partition's offset, and the
// transaction its metadata names.
type offsetCommit struct {
	part   int32
	offset int64
	txn    string
}

func (h *copyHistory) began(s *Sim, name string, part int32, from, to int64, readFrom string) {
	if h.txns == nil {
		h.txns = map[string]*copyTxn{}
	}
	h.txns[name] = &copyTxn{name: name, part: part, from: from, to: to, readFrom: readFrom, start: s.now, end: -1}
	if w := h.txns[readFrom]; w != nil && w.outcome == txnAborted {
		s.violate("G1a", "copier transaction %s started from offset %d of %s-%d, committed by %s, which aborted", name, from, copyInTopic, part, readFrom)
	}
}

func (h *copyHistory) ended(name string, outcome txnOutcome, now int64) {
	t := h.txns[name]
	if t == nil {
		return
	}
	t.outcome = outcome
	if outcome == txnCommitted {
		t.end = now
	}
}

// final runs the end-of-run checks: visible is what read_committed shows
// of each partition of "tx", in offset order.
func (h *copyHistory) final(s *Sim, visible map[string][]string, end copyEnd) {
	if h.exactlyOnce(s, visible, end) {
		h.cycles(s, visible, end)
	}
}

// exactlyOnce reports whether the output holds each input record below
// the committed offsets once, and nothing else.
func (h *copyHistory) exactlyOnce(s *Sim, visible map[string][]string, end copyEnd) bool {
	type copied struct {
		n     int
		where string
		input string
	}
	copies := map[int32]map[int64]*copied{}
	for _, k := range slices.Sorted(maps.Keys(visible)) {
		for _, v := range visible[k] {
			_, part, off, input, ok := copyOf(v)
			if !ok {
				continue
			}
			if copies[part] == nil {
				copies[part] = map[int64]*copied{}
			}
			c := copies[part][off]
			if c == nil {
				c = &copied{where: k, input: input}
				copies[part][off] = c
			}
			c.n++
		}
	}
	for _, part := range slices.Sorted(maps.Keys(end.committed)) {
		top := max(end.committed[part], 0)
		for off := int64(0); off < top; off++ {
			c := copies[part][off]
			switch {
			case c == nil:
				s.violate("exactly-once", "%s-%d offset %d is below the group's committed offset %d and copied by no committed transaction", copyInTopic, part, off, top)
				return false
			case c.n > 1:
				s.violate("exactly-once", "%s-%d offset %d is copied %d times (into %s)", copyInTopic, part, off, c.n, c.where)
				return false
			case end.input[part] != nil && c.input != end.input[part][off]:
				s.violate("exactly-once", "%s-%d offset %d holds %q, and its copy in %s says %q", copyInTopic, part, off, end.input[part][off], c.where, c.input)
				return false
			}
		}
		for _, off := range slices.Sorted(maps.Keys(copies[part])) {
			if off >= top {
				s.violate("exactly-once", "%s-%d offset %d is copied (into %s), at or above the group's committed offset %d", copyInTopic, part, off, copies[part][off].where, top)
				return false
			}
		}
	}
	return true
}

// copyEdge is one edge of the dependency graph.
type copyEdge struct {
	to   string
	kind string // "ww <object>" or "wr"
}

// cycles looks for G0, then G1c, among the committed transactions.
func (h *copyHistory) cycles(s *Sim, visible map[string][]string, end copyEnd) {
	committed := map[string]bool{}
	for _, c := range end.commits {
		committed[c.txn] = true
	}
	for _, vs := range visible {
		for _, v := range vs {
			if name, _, _, _, ok := copyOf(v); ok {
				committed[name] = true
			}
		}
	}
	edges := map[string][]copyEdge{}
	add := func(from, to, kind string) {
		a, b := h.txns[from], h.txns[to]
		if from == to || a == nil || b == nil || !committed[from] || !committed[to] {
			return
		}
		if a.part == b.part || (a.end >= 0 && a.end < b.start) { // ordered by a promise
			edges[from] = append(edges[from], copyEdge{to, kind})
		}
	}
	last := map[int32]string{}
	for _, c := range end.commits {
		if prev, ok := last[c.part]; ok {
			add(prev, c.txn, fmt.Sprintf("ww %s/%s-%d", copyGroup, copyInTopic, c.part))
		}
		last[c.part] = c.txn
	}
	for _, k := range slices.Sorted(maps.Keys(visible)) {
		byCopier := map[int32]string{}
		for _, v := range visible[k] {
			name, _, _, _, ok := copyOf(v)
			t := h.txns[name]
			if !ok || t == nil {
				continue
			}
			for _, part := range slices.Sorted(maps.Keys(byCopier)) {
				add(byCopier[part], name, "ww "+k)
			}
			byCopier[t.part] = name
		}
	}
	ww := map[string][]copyEdge{}
	for from, es := range edges {
		ww[from] = slices.Clone(es)
	}
	for _, name := range slices.Sorted(maps.Keys(h.txns)) {
		if t := h.txns[name]; t.readFrom != "" {
			add(t.readFrom, name, "wr")
		}
	}
	if c := findCycle(ww); c != "" {
		s.violate("G0", "a cycle of write-write dependencies among committed copier transactions: %s", c)
		return
	}
	if c := findCycle(edges); c != "" {
		s.violate("G1c", "a cycle of write-write and write-read dependencies among committed copier transactions: %s", c)
	}
}

// findCycle describes a cycle of the graph, "" if it has none.
func findCycle(edges map[string][]copyEdge) string {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var kinds []string
	var found string
	var visit func(n string) bool
	visit = func(n string) bool {
		state[n] = onPath
		path = append(path, n)
		for _, e := range edges[n] {
			switch state[e.to] {
			case onPath:
				i := slices.Index(path, e.to)
				var b strings.Builder
				for j := i; j < len(path); j++ {
					k := e.kind
					if j+1 < len(path) {
						k = kinds[j]
					}
					fmt.Fprintf(&b, "%s -%s-> ", path[j], k)
				}
				b.WriteString(e.to)
				found = b.String()
				return true
			case unseen:
				kinds = append(kinds, e.kind)
				if visit(e.to) {
					return true
				}
				kinds = kinds[:len(kinds)-1]
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return false
	}
	for _, n := range slices.Sorted(maps.Keys(edges)) {
		if state[n] == unseen && visit(n) {
			return found
		}
	}
	return ""
}
