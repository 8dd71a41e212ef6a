package group_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/group/grouptest"
	"github.com/minikafka/minikafka/engine"
	_ "github.com/minikafka/minikafka/engines/pebble"
	_ "github.com/minikafka/minikafka/engines/segment"
)

// TestOffsetsSurviveEngineReopen runs the coordinator over every durable
// engine: what was committed (and the group's generation) is there after
// the engine is closed and opened again.
func TestOffsetsSurviveEngineReopen(t *testing.T) {
	for _, name := range engine.Names() {
		d, err := engine.Lookup(name)
		require.NoError(t, err)
		if !d.Caps.Durable {
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			eng, err := engine.Open(name, dir, engine.Options{})
			require.NoError(t, err)
			e := newEnv(t, func(c *group.Config) { c.Log = grouptest.NewLog(eng) })
			ids, gen := e.stable("g", 2)
			require.Equal(t, []int16{0, 0}, commitCodes(e.c.OffsetCommit(commitReq("g", ids[0], gen, tpo{"t", 0, 100}, tpo{"t", 11, 111}))))
			require.Equal(t, []int16{0}, commitCodes(e.c.OffsetCommit(commitReq("g", ids[0], gen, tpo{"t", 0, 101}))))
			require.NoError(t, e.c.Close())
			require.NoError(t, eng.Close())

			eng, err = engine.Open(name, dir, engine.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { eng.Close() })
			e.cfg.Log = grouptest.NewLog(eng)
			e.open()
			assert.Equal(t, []int64{101, 111}, e.fetch("g", 0, 11))
			assert.Zero(t, e.heartbeat("g", ids[1], gen), "the generation survived too")
		})
	}
}
