//go:build !mutations

package group

// mutations: without the mutations tag no protection can be switched off.
type mutations struct{}

func (mutations) has(string) bool { return false }
