//go:build mutations

package replication

import "fmt"

// Mutate switches off the protection named (see mutations.go) for the
// Leader built from c. Only builds with the mutations tag have it: the
// simulator's test-only hook.
func (c *LeaderConfig) Mutate(name string) error { return c.mut.set(name) }

// Mutate is LeaderConfig.Mutate for a Follower.
func (c *FollowerConfig) Mutate(name string) error { return c.mut.set(name) }

// MutationNames are the names Mutate takes.
var MutationNames = []string{"truncate-to-hw", "leader-end-only", "count-unsynced", "no-epoch-fencing",
	"expand-before-epoch-start", "ignore-min-isr", "no-broker-epoch", "hw-committed-isr", "hw-proposed-isr", "propose-while-pending"}

func (m *mutations) set(name string) error {
	switch name {
	case "truncate-to-hw":
		m.truncateToHW = true
	case "leader-end-only":
		m.leaderEndOnly = true
	case "count-unsynced":
		m.countUnsynced = true
	case "no-epoch-fencing":
		m.noEpochFencing = true
	case "expand-before-epoch-start":
		m.expandBeforeEpochStart = true
	case "ignore-min-isr":
		m.ignoreMinISR = true
	case "no-broker-epoch":
		m.noBrokerEpoch = true
	case "hw-committed-isr":
		m.hwCommittedISR = true
	case "hw-proposed-isr":
		m.hwProposedISR = true
	case "propose-while-pending":
		m.proposeWhilePending = true
	default:
		return fmt.Errorf("replication: no mutation %q (have %v)", name, MutationNames)
	}
	return nil
}
