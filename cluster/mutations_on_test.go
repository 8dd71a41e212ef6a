//go:build mutations

package cluster

import (
	"path/filepath"
	"testing"
)

func mutate(s *Settings, name string) error { return s.Mutate(name) }

// TestMutationScenarios runs testdata/mutations/ (see TestMutations).
func TestMutationScenarios(t *testing.T) {
	runScenarios(t, filepath.Join("testdata", "mutations", "*.txt"))
}
