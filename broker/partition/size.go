package partition

import "github.com/minikafka/minikafka/engine"

// SizeBytes is the partition's size for DescribeLogDirs. An engine that can
// say what the log takes on disk (engine.Sizer: segment) says it. Others
// keep many logs in one LSM (pebble, badger) or none on disk (memory), and
// cannot say it per log without a scan of their own: for them it is the
// bytes of the batches from the log start to the high watermark, as stored
// (the figure retention.bytes is checked against), counted by the time
// index. That index is built once, by its first use, from one read of the
// committed log (retention's first check builds it anyway for a topic with
// retention.ms or retention.bytes, that is every topic but the internal
// ones by default), and catches up incrementally after; the batches above
// the HW are left out.
func (p *Partition) SizeBytes() (int64, error) {
	if s, ok := engine.As[engine.Sizer](p.log); ok {
		return s.SizeBytes(), nil
	}
	ti := &p.ti
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if err := ti.catchUp(p); err != nil {
		return 0, err
	}
	return ti.cumCovered - ti.cumStart, nil
}

// OffsetLag is how many offsets this replica is behind for
// DescribeLogDirs: 0 on the leader (as Kafka reports it), and on a
// follower the leader's high watermark, as of its last fetch response,
// minus this log's end; never negative. Kafka compares a follower's end
// with its own HW, which never passes its end, so its followers always
// report 0; the leader's HW is the figure a tool showing lag wants.
func (p *Partition) OffsetLag() int64 {
	if st, ok := p.FollowerState(); ok {
		return max(0, st.LeaderHW-st.LogEnd)
	}
	return 0
}
