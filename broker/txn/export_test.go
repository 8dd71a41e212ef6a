package txn

// Held is how many requests c holds for id's transaction to complete
// (Request.Wait).
func Held(c *Coordinator, id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.core.txns[id]; e != nil {
		return len(e.held)
	}
	return 0
}
