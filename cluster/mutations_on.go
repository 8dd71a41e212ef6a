//go:build mutations

package cluster

import (
	"fmt"
	"slices"
)

// mutations are the rules switched off, one bit per MutationNames entry
// (Settings stays comparable).
type mutations struct{ off uint32 }

func (m mutations) has(name string) bool {
	i := slices.Index(MutationNames, name)
	return i >= 0 && m.off&(1<<i) != 0
}

// Mutate switches off the controller's rule named (mutations.go), for the
// simulator's and the tests' use, in this build only.
func (s *Settings) Mutate(name string) error {
	i := slices.Index(MutationNames, name)
	if i < 0 {
		return fmt.Errorf("cluster: no mutation %q (have %v)", name, MutationNames)
	}
	s.mut.off |= 1 << i
	return nil
}
