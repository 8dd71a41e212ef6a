package broker

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestQuorumLoggerNamesNodes: what the quorum logs by raft id reaches the
// broker's log as node ids; other attributes pass unchanged.
func TestQuorumLoggerNamesNodes(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, nil)).With("broker", 7)
	l := quorumLogger(base, "quorum").With("raft-id", uint64(1))
	l.Info("quorum: leader changed", "leader", uint64(3), "term", uint64(9), "was", uint64(0), "voters", []uint64{1, 2, 3})
	out := buf.String()
	assert.Contains(t, out, "broker=7 component=quorum node=0 ")
	assert.Contains(t, out, "leader=2 term=9 was=-1 voters=\"[0 1 2]\"")
	assert.NotContains(t, out, "raft-id")
}
