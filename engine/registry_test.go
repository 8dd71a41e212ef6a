package engine_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

// TestInlineNeedsTheCapability: an engine that may start goroutines is
// never handed to a caller that asked for none.
func TestInlineNeedsTheCapability(t *testing.T) {
	opened := 0
	engine.Register(engine.Driver{
		Name: "registry-test-threaded",
		Open: func(string, engine.Options) (engine.LogEngine, error) { opened++; return nil, nil },
	})
	_, err := engine.Open("registry-test-threaded", t.TempDir(), engine.Options{Inline: true})
	require.ErrorIs(t, err, engine.ErrUnsupported)
	_, err = engine.OpenStore("registry-test-threaded", t.TempDir(), engine.Options{Inline: true})
	require.ErrorIs(t, err, engine.ErrUnsupported)
	assert.Zero(t, opened, "the driver was never asked")
}
