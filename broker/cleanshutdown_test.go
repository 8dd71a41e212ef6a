package broker_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
)

// TestCleanShutdownMarker: a broker closed cleanly registers at its next
// start with the epoch it had (KIP-966's PreviousBrokerEpoch); one that
// crashed (no marker), or whose marker is damaged, registers with -1, so
// that the controller takes it out of every ELR.
func TestCleanShutdownMarker(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "clean-shutdown")
	b := brokertest.Start(t, brokertest.Dir(dir), brokertest.Engine("segment"))
	require.Equal(t, int64(-1), broker.PreviousEpoch(b.Server), "a first start")
	registeredBy := b.Metadata().Offset()

	b.Restart(t, func() { require.FileExists(t, marker, "written by the clean close") })
	prev := broker.PreviousEpoch(b.Server)
	require.Positive(t, prev)
	require.LessOrEqual(t, uint64(prev), registeredBy)
	require.NoFileExists(t, marker, "removed at the start it served: a crash from now on is unclean")

	b.Restart(t, func() { require.NoError(t, os.Remove(marker)) })
	require.Equal(t, int64(-1), broker.PreviousEpoch(b.Server), "after a crash")

	b.Restart(t, func() { require.NoError(t, os.WriteFile(marker, []byte("torn"), 0o644)) })
	require.Equal(t, int64(-1), broker.PreviousEpoch(b.Server), "a damaged marker proves nothing")
	require.NoFileExists(t, marker)
}
