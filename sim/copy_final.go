package sim

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
)

// What the copy checkers read at the end of a run (check_copy.go).

// copyOf parses a copy's value: its transaction, input partition, input
// offset and input value.
func copyOf(value string) (name string, part int32, off int64, input string, ok bool) {
	f := strings.SplitN(value, "-", 3)
	if len(f) < 3 || !strings.HasPrefix(f[2], "c") {
		return "", 0, 0, "", false
	}
	g := strings.SplitN(f[2][1:], ".", 3)
	if len(g) < 3 {
		return "", 0, 0, "", false
	}
	pn, err1 := strconv.Atoi(g[0])
	o, err2 := strconv.ParseInt(g[1], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, 0, "", false
	}
	return f[0] + "-" + f[1], int32(pn), o, g[2], true
}

// copyFinal gathers, at the end of a run, what the copy checkers need
// besides what read_committed shows of "tx": the group's committed
// offsets, the commits of its offsets in the order of the offsets log,
// and the input.
func (s *Sim) copyFinal() copyEnd {
	end := copyEnd{committed: map[int32]int64{}, input: map[int32]map[int64]string{}}
	for _, b := range s.brokers {
		if !b.up {
			continue
		}
		img := b.store.Image()
		if t, ok := img.Topic(offsetsTopic); ok && t.Partitions[groupPartitionOf(copyGroup)].Leader == b.id {
			if r := b.replicas[tp{t.ID, groupPartitionOf(copyGroup)}]; r != nil && r.p.Role().Local {
				end.commits = offsetCommits(s, b, r)
			}
			if c, _ := b.groupCoordFor(copyGroup); c != nil {
				for part := range int32(s.opts.copiers()) {
					if off, _, code := c.fetchOffset(copyGroup, copyInTopic, part); code == 0 {
						end.committed[part] = off
					}
				}
			}
		}
		t, ok := img.Topic(copyInTopic)
		if !ok {
			continue
		}
		for i, pt := range t.Partitions {
			r := b.replicas[tp{t.ID, int32(i)}]
			if pt.Leader != b.id || r == nil || !r.p.Role().Local {
				continue
			}
			in := map[int64]string{}
			for pos := r.p.StartOffset(); ; {
				rd := b.serveConsume(r.tp, pos)
				if rd.err != nil || len(rd.batches) == 0 {
					break
				}
				for _, rec := range decode(s, rd.batches) {
					in[rec.Offset] = string(rec.Value)
					pos = max(pos, rec.Offset+1)
				}
			}
			end.input[int32(i)] = in
		}
	}
	return end
}

// offsetCommits reads the offsets of group "copy" committed in the log of
// r, a partition of __consumer_offsets, in commit order: a transaction's
// at its commit marker (read_committed's order of decisions), a plain
// commit where it stands.
func offsetCommits(s *Sim, b *broker, r *replica) []offsetCommit {
	var out []offsetCommit
	held := map[int64][]offsetCommit{} // by producer id, until its marker
	for pos := r.p.StartOffset(); pos < r.p.HighWatermark(); {
		data, err := r.p.ReadToEnd(pos, fetchMaxBytes)
		if err != nil || len(data) == 0 {
			break
		}
		bs, err := batch.Split(data)
		if err != nil {
			s.violate("corrupt-read", "b%d %s: the offsets log does not split at %d: %v", b.id, r.tp, pos, err)
			return out
		}
		for _, bt := range bs {
			h, err := batch.ParseHeader(bt)
			if err != nil {
				return out
			}
			pos = h.LastOffset() + 1
			if h.Attributes.Control() {
				if m, err := batch.ParseMarker(bt); err == nil && m.Commit {
					out = append(out, held[h.ProducerID]...)
				}
				delete(held, h.ProducerID)
				continue
			}
			for _, rec := range decode(s, [][]byte{bt}) {
				c, ok := offsetCommitOf(rec.Key, rec.Value)
				if !ok {
					continue
				}
				if h.Attributes.Transactional() {
					held[h.ProducerID] = append(held[h.ProducerID], c)
				} else {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// offsetCommitOf reads an offset commit record of group "copy" (Kafka's
// key and value formats, kmsg's codecs).
func offsetCommitOf(key, value []byte) (offsetCommit, bool) {
	var k kmsg.OffsetCommitKey
	if len(key) < 2 || key[1] > 1 || k.ReadFrom(key) != nil || k.Group != copyGroup || value == nil {
		return offsetCommit{}, false
	}
	var v kmsg.OffsetCommitValue
	if v.ReadFrom(value) != nil {
		return offsetCommit{}, false
	}
	return offsetCommit{part: k.Partition, offset: v.Offset, txn: v.Metadata}, true
}
