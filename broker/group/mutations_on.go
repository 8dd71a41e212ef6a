//go:build mutations

package group

import (
	"fmt"
	"slices"
)

// mutations are the rules switched off for a coordinator.
type mutations struct{ off []string }

func (m mutations) has(name string) bool { return slices.Contains(m.off, name) }

// Mutate switches off the protection named (mutations.go) for the
// coordinator opened with c: the simulator's hook, in this build only.
func (c *Config) Mutate(name string) error {
	if !slices.Contains(MutationNames, name) {
		return fmt.Errorf("group: no mutation %q (have %v)", name, MutationNames)
	}
	c.mut.off = append(c.mut.off, name)
	return nil
}
