//go:build !mutations

package replication

// mutations is empty outside a build with the mutations tag: every rule
// holds, and has is a constant.
type mutations struct{}

func (mutations) has(string) bool { return false }
