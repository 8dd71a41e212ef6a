package clusterinterop

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/interop/interoptest"
)

// confluentPython finds a Python 3 that imports confluent-kafka-python
// (librdkafka's admin client).
func confluentPython(t *testing.T) string {
	return interoptest.Python(t, "confluent_kafka.admin", "python3-confluent-kafka")
}

// TestAdminClientAfterControllerKill: librdkafka's admin client, one
// long-lived client as a user's program has, creates a topic after the
// active controller is killed -9, three times (each time restarted).
// The client sends CreateTopics to the broker Metadata names as the
// controller and keeps that id until its metadata changes: a broker that
// named the active controller sent it, after the kill, to the one node that
// was dead, and every attempt timed out "waiting for controller" (30 s in
// two runs of two) while the quorum had a new leader within 50 ms. A request
// written to the killed broker's socket before the client saw it close fails
// at once with _TRANSPORT, as it would against Kafka; the script retries
// that as a user's program does (testdata/admin_create.py).
func TestAdminClientAfterControllerKill(t *testing.T) {
	py := confluentPython(t)
	c := startCluster(t, 3, "segment")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/admin_create.py", strings.Join(c.seeds(), ","))
	cmd.Stderr = testLog{t}
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	answers := bufio.NewScanner(out)
	create := func(name string) string {
		t.Helper()
		_, err := fmt.Fprintln(in, name)
		require.NoError(t, err)
		require.True(t, answers.Scan(), "the admin client answers for %s: %v", name, answers.Err())
		return answers.Text()
	}
	require.True(t, strings.HasPrefix(create("before"), "ok "), "a topic created before any kill")
	for round := range 3 {
		ctl, err := c.controller(ctx)
		require.NoError(t, err)
		c.kill(c.node(ctl))
		name := fmt.Sprintf("after-kill-%d", round)
		got := create(name)
		t.Logf("round %d: controller %d killed; the admin client: %s", round, ctl, got)
		require.True(t, strings.HasPrefix(got, "ok "), "CreateTopics %s with librdkafka's admin client after controller %d was killed: %s", name, ctl, got)
		c.start(c.node(ctl))
		c.waitBrokers(3, 30*time.Second)
	}
}
