package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// txnHistory looks for the anomalies of transactions (Jepsen's, from its
// 2024 analysis of a Kafka-compatible broker's transactions), from what
// the producers were told and what read_committed consumers read:
//
//   - aborted-read: a consumer read a record of a transaction its producer
//     aborted (EndTxn answered the abort);
//   - txn-lost-write: a transaction its producer committed (EndTxn answered
//     the commit) whose acknowledged records none of the partitions shows
//     to read_committed at the end of the run;
//   - txn-partial-read: at the end of the run, read_committed shows some of
//     a transaction's acknowledged records and not others (once its markers
//     are committed a transaction is all or nothing);
//   - hanging-transaction: at the end of the run, with every transaction
//     ended and every coordinator done, a partition's last stable offset is
//     below its high watermark: a transaction is open there that no
//     coordinator will end.
//
// A transaction whose end the producer was not told (EndTxn refused: the
// coordinator aborted it past its timeout) is held to all or nothing only.
type txnHistory struct {
	txns map[string]*txnEntry
}

type txnOutcome int

const (
	txnOpen txnOutcome = iota
	txnCommitted
	txnAborted
	txnUnknown
)

func (o txnOutcome) String() string {
	return [...]string{"open", "committed", "aborted", "unknown"}[o]
}

type txnEntry struct {
	acked   map[string]bool // values acknowledged
	outcome txnOutcome
	reads   []string // what consumers read of it: "consumer c at offset o"
}

func (h *txnHistory) entry(name string) *txnEntry {
	if h.txns == nil {
		h.txns = map[string]*txnEntry{}
	}
	e := h.txns[name]
	if e == nil {
		e = &txnEntry{acked: map[string]bool{}}
		h.txns[name] = e
	}
	return e
}

// txnOf is the transaction a record's value names ("x0-t3-p1-r0": x0-t3).
func txnOf(value []byte) (string, bool) {
	f := strings.SplitN(string(value), "-", 3)
	if len(f) < 3 || !strings.HasPrefix(f[0], "x") || !strings.HasPrefix(f[1], "t") {
		return "", false
	}
	return f[0] + "-" + f[1], true
}

// acked: a write of transaction name was acknowledged.
func (h *txnHistory) acked(name string, values [][]byte) {
	e := h.entry(name)
	for _, v := range values {
		e.acked[string(v)] = true
	}
}

// ended: the producer learnt what became of transaction name.
func (h *txnHistory) ended(s *Sim, name string, outcome txnOutcome) {
	e := h.entry(name)
	e.outcome = outcome
	if outcome == txnAborted && len(e.reads) > 0 {
		s.violate("aborted-read", "transaction %s was aborted, and read_committed read %s", name, e.reads[0])
	}
}

// read: a read_committed consumer read value at offset off of k.
func (h *txnHistory) read(s *Sim, consumer int32, k tp, off int64, value []byte) {
	s.stats.Reads++
	name, ok := txnOf(value)
	if !ok {
		s.violate("aborted-read", "consumer %d read %q at %s offset %d, which no transactional producer wrote", consumer, value, k, off)
		return
	}
	e := h.entry(name)
	at := fmt.Sprintf("%q at %s offset %d (consumer %d)", value, k, off, consumer)
	e.reads = append(e.reads, at)
	if e.outcome == txnAborted {
		s.violate("aborted-read", "transaction %s was aborted, and read_committed read %s", name, at)
	}
}

// final checks what read_committed shows of every partition at the end:
// visible are the values it shows, by partition; hanging the partitions
// whose last stable offset is below the high watermark, described.
func (h *txnHistory) final(s *Sim, visible map[string][]string, hanging []string) {
	if len(hanging) > 0 {
		s.violate("hanging-transaction", "every transaction ended, and %s", hanging[0])
		return
	}
	seen := map[string]map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(visible)) {
		for _, v := range visible[k] {
			name, ok := txnOf([]byte(v))
			if !ok {
				s.violate("aborted-read", "read_committed shows %q in %s, which no transactional producer wrote", v, k)
				return
			}
			if seen[name] == nil {
				seen[name] = map[string]bool{}
			}
			seen[name][v] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(h.txns)) {
		e := h.txns[name]
		shown := seen[name]
		var missing []string
		for _, v := range slices.Sorted(maps.Keys(e.acked)) {
			if !shown[v] {
				missing = append(missing, v)
			}
		}
		switch {
		case e.outcome == txnAborted && len(shown) > 0:
			s.violate("aborted-read", "transaction %s was aborted, and read_committed shows %d of its records at the end", name, len(shown))
		case e.outcome == txnCommitted && len(e.acked) > 0 && len(shown) == 0:
			s.violate("txn-lost-write", "transaction %s was committed, and read_committed shows none of its %d records at the end", name, len(e.acked))
		case len(shown) > 0 && len(missing) > 0:
			s.violate("txn-partial-read", "transaction %s (%s): read_committed shows %d of its records, not %s", name, e.outcome, len(shown), missing[0])
		default:
			continue
		}
		return
	}
}
