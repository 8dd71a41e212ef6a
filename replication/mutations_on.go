//go:build mutations

package replication

import (
	"fmt"
	"slices"
)

// mutations are the rules switched off for one Leader or Follower.
type mutations struct{ off []string }

func (m mutations) has(name string) bool { return slices.Contains(m.off, name) }

func (m *mutations) set(name string) error {
	if !slices.Contains(MutationNames, name) {
		return fmt.Errorf("replication: no mutation %q (have %v)", name, MutationNames)
	}
	m.off = append(m.off, name)
	return nil
}

// Mutate switches off the protection named (mutations.go) for the Leader
// built from c: the simulator's and the tests' hook, in this build only.
func (c *LeaderConfig) Mutate(name string) error { return c.mut.set(name) }

// Mutate is LeaderConfig.Mutate for a Follower.
func (c *FollowerConfig) Mutate(name string) error { return c.mut.set(name) }
