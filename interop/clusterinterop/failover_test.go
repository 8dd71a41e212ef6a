package clusterinterop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestControllerFailover: kill -9 of the active controller leaves a quorum
// of two that accepts CreateTopics; the killed node comes back as a voter
// and a broker.
func TestControllerFailover(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			c := startCluster(t, 3, eng)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for round := range 2 {
				leader, err := c.controller(ctx)
				require.NoError(t, err)
				killed := time.Now()
				c.kill(c.node(leader))
				name := fmt.Sprintf("after-kill-%d", round)
				require.Eventually(t, func() bool {
					short, cancel := context.WithTimeout(ctx, 2*time.Second)
					defer cancel()
					resp, err := c.admin().CreateTopic(short, 2, 2, nil, name)
					return err == nil && resp.Err == nil
				}, 30*time.Second, 20*time.Millisecond, "CreateTopics after killing controller %d", leader)
				t.Logf("%s: controller %d killed; CreateTopics succeeded %v later", eng, leader, time.Since(killed).Round(time.Millisecond))
				next, err := c.controller(ctx)
				require.NoError(t, err)
				assert.NotEqual(t, leader, next, "another node leads the quorum")
				c.waitBrokers(2, 30*time.Second)
				c.start(c.node(leader))
				c.waitBrokers(3, 30*time.Second)
			}
		})
	}
}

// TestBrokerFencing: kill -9 of a broker fences it (Metadata stops listing
// it, its leaderships move) well before the session timeout, since its
// heartbeat connection closed; a restart registers it again with a new
// epoch, and it rejoins the ISRs.
func TestBrokerFencing(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			c := startCluster(t, 3, eng, "-broker-session-timeout", "30s")
			c.createTopic("t", 3, 3, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			ctl, err := c.controller(ctx)
			require.NoError(t, err)
			victim := 1 + ctl%3 // not the controller
			killed := time.Now()
			c.kill(c.node(victim))
			c.waitBrokers(2, 10*time.Second)
			td := c.waitLeaders("t", 10*time.Second)
			fenced := time.Since(killed)
			t.Logf("%s: broker %d killed; fenced and its leaderships moved %v later (session timeout 30s)", eng, victim, fenced.Round(time.Millisecond))
			assert.Less(t, fenced, 30*time.Second, "sooner than the session timeout")
			for _, p := range td.Partitions {
				assert.NotEqual(t, int32(victim), p.Leader)
				assert.NotContains(t, p.ISR, int32(victim), "partition %d", p.Partition)
			}

			c.start(c.node(victim))
			c.waitBrokers(3, 30*time.Second)
			require.Eventually(t, func() bool {
				m, err := c.metadata(ctx, "t")
				if err != nil {
					return false
				}
				for _, p := range m.Topics["t"].Partitions {
					if len(p.ISR) != 3 {
						return false
					}
				}
				return true
			}, 30*time.Second, 50*time.Millisecond, "the restarted broker rejoins every ISR")
		})
	}
}
