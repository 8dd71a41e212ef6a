package sim

import "container/heap"

// event is one thing that happens at a tick. seq orders events of the same
// tick by when they were scheduled, so the order never depends on the heap.
type event struct {
	tick int64
	seq  uint64
	kind string // for the trace
	fn   func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].tick != q[j].tick {
		return q[i].tick < q[j].tick
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// at schedules fn after delay ticks.
func (s *Sim) at(delay int64, kind string, fn func()) {
	if delay < 0 {
		delay = 0
	}
	s.seq++
	heap.Push(&s.queue, &event{tick: s.now + delay, seq: s.seq, kind: kind, fn: fn})
}

// step runs the earliest event; false when there is none.
func (s *Sim) step() bool {
	if len(s.queue) == 0 {
		return false
	}
	e := heap.Pop(&s.queue).(*event)
	s.now = e.tick
	s.traceEvent(e)
	e.fn()
	return true
}
