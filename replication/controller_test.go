package replication

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// controller is the scenario tests' stand-in for package cluster: one
// partition's committed state and the controller's rules for it, as
// cluster/alter.go and cluster/elect.go have them (AlterPartition checked
// against epochs, KIP-841, KIP-903; elections from the ISR then the ELR,
// KIP-966), reduced to what replication scenarios need.
type controller struct {
	replicas                    []int32
	minISR                      int
	isr, elr                    []int32
	leader                      int32 // -1: none
	leaderEpoch, partitionEpoch int32
	brokerEpochs                []int64 // registered, by id-1
	active                      []bool  // registered and unfenced, by id-1
	nextEpoch                   int64
}

func newController(n, minISR int) *controller {
	c := &controller{minISR: minISR, leader: 1, nextEpoch: int64(n) + 1}
	for id := int32(1); id <= int32(n); id++ {
		c.replicas = append(c.replicas, id)
		c.brokerEpochs = append(c.brokerEpochs, int64(id))
		c.active = append(c.active, true)
	}
	c.isr = slices.Clone(c.replicas)
	return c
}

func (c *controller) String() string {
	s := fmt.Sprintf("leader=%d leader-epoch=%d partition-epoch=%d isr=%v", c.leader, c.leaderEpoch, c.partitionEpoch, c.isr)
	if len(c.elr) > 0 {
		s += fmt.Sprintf(" elr=%v", c.elr)
	}
	return s
}

// eligible lists the brokers that may join an ISR, with their epochs.
func (c *controller) eligible() []ISRMember {
	var out []ISRMember
	for _, id := range c.replicas {
		if c.active[id-1] {
			out = append(out, ISRMember{ID: id, BrokerEpoch: c.brokerEpochs[id-1]})
		}
	}
	return out
}

// setISR installs isr with KIP-966's rule: members leaving an ISR that is
// then below MinISR become eligible leader replicas; the ELR empties once
// the ISR is back at MinISR.
func (c *controller) setISR(isr []int32) {
	old := c.isr
	c.isr = inReplicaOrder(c.replicas, isr)
	if len(c.isr) >= c.minISR {
		c.elr = nil
		return
	}
	elr := slices.Clone(c.elr)
	for _, r := range old {
		if !slices.Contains(c.isr, r) && !slices.Contains(elr, r) {
			elr = append(elr, r)
		}
	}
	c.elr = inReplicaOrder(c.replicas, without(elr, c.isr))
}

// alter decides a leader's AlterPartition.
func (c *controller) alter(p ProposeISR) AlterPartitionResult {
	res := AlterPartitionResult{Seq: p.Seq}
	switch {
	case p.LeaderEpoch != c.leaderEpoch:
		res.Err = kerr.FencedLeaderEpoch
	case p.PartitionEpoch != c.partitionEpoch:
		res.Err = kerr.InvalidUpdateVersion
	}
	var isr []int32
	for _, m := range p.NewISR {
		if res.Err != nil {
			break
		}
		reg := c.brokerEpochs[m.ID-1]
		if (m.BrokerEpoch >= 0 && m.BrokerEpoch != reg) || (!slices.Contains(c.isr, m.ID) && !c.active[m.ID-1]) {
			res.Err = kerr.IneligibleReplica
		}
		isr = append(isr, m.ID)
	}
	if res.Err == nil && !slices.Contains(isr, c.leader) {
		res.Err = kerr.InvalidRequest
	}
	if res.Err != nil {
		return res
	}
	if !slices.Equal(inReplicaOrder(c.replicas, isr), c.isr) {
		c.setISR(isr)
		c.partitionEpoch++
	}
	res.LeaderEpoch, res.PartitionEpoch, res.ISR = c.leaderEpoch, c.partitionEpoch, slices.Clone(c.isr)
	return res
}

// fence is a broker's session ending: out of the ISR, and a new leader if
// it led. It reports whether the partition changed.
func (c *controller) fence(id int32) bool {
	c.active[id-1] = false
	changed := false
	if slices.Contains(c.isr, id) {
		c.setISR(without(c.isr, []int32{id}))
		changed = true
	}
	if c.leader == id {
		c.elect()
		changed = true
	}
	if changed {
		c.partitionEpoch++
	}
	return changed
}

// elect picks the first active replica in the ISR, else in the ELR (which
// then becomes the ISR alone); none leaves the partition offline. Every
// call is a leader change.
func (c *controller) elect() {
	c.leaderEpoch++
	c.leader = -1
	for _, pool := range [][]int32{c.isr, c.elr} {
		for _, r := range c.replicas {
			if slices.Contains(pool, r) && c.active[r-1] {
				c.leader = r
				if !slices.Contains(c.isr, r) {
					c.isr, c.elr = []int32{r}, without(c.elr, []int32{r})
				}
				return
			}
		}
	}
}

// register is a broker (re)starting: its previous incarnation is fenced,
// it gets a new broker epoch and is unfenced; an offline partition gets a
// leader if it can now.
func (c *controller) register(id int32) bool {
	changed := false
	if c.active[id-1] || slices.Contains(c.isr, id) {
		changed = c.fence(id)
	}
	c.brokerEpochs[id-1] = c.nextEpoch
	c.nextEpoch++
	c.active[id-1] = true
	if c.leader < 0 {
		prev := c.leaderEpoch
		if c.elect(); c.leader < 0 {
			c.leaderEpoch = prev // still offline: nothing changed
		} else {
			c.partitionEpoch++
			changed = true
		}
	}
	return changed
}

func without(s, drop []int32) []int32 {
	var out []int32
	for _, v := range s {
		if !slices.Contains(drop, v) {
			out = append(out, v)
		}
	}
	return out
}
