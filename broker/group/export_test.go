package group

import "time"

// CommittedOffsets returns every committed offset of group id, with its
// commit time at the millisecond a record keeps and without its log
// position: what a replay must give back, compaction or not.
func CommittedOffsets(c *Coordinator, id string) []Commit {
	var out []Commit
	c.step(id, false, func(g *Group, _ time.Time) { out = g.AllCommitted() })
	for i := range out {
		out[i].pos = 0
		out[i].CommitTime = time.UnixMilli(out[i].CommitTime.UnixMilli()).UTC()
	}
	return out
}

// WaitCompactionIdle returns once no compaction of __consumer_offsets runs.
func WaitCompactionIdle(c *Coordinator) { c.lg.WaitIdle() }

// WaitStores returns once every store under way (group metadata written
// in the background) is durable or failed. Nothing may start one meanwhile.
func WaitStores(c *Coordinator) { c.bg.Wait() }

// SetCompactHook makes every later compaction call f between taking the
// live keys and copying them: where commits and deletions race with it.
func SetCompactHook(c *Coordinator, f func()) { c.lg.SetHook(f) }
