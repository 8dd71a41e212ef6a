package interop

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// rdkafkaDeleteRecords builds testdata/delete_records.c, librdkafka's admin
// DeleteRecords (kcat has none, and the Debian confluent-kafka-python 1.7
// and kafka-python 2.0 bindings lack it).
func rdkafkaDeleteRecords(t *testing.T) string { return rdkafkaProgram(t, "delete_records") }

// rdkafkaProgram builds testdata/NAME.c with the C compiler against
// librdkafka-dev. Without them the test skips, except under CI, where
// .ci/run installs librdkafka-dev.
func rdkafkaProgram(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	src := filepath.Join("testdata", name+".c")
	cc, err := exec.LookPath("cc")
	var out []byte
	if err == nil {
		out, err = exec.Command(cc, "-Wall", "-o", bin, src, "-lrdkafka").CombinedOutput()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("cannot build %s but CI is set: .ci/run installs librdkafka-dev: %v\n%s", src, err, out)
		}
		t.Skipf("cannot build %s (apt-get install librdkafka-dev; set CI to make this a failure): %v\n%s", src, err, out)
	}
	return bin
}

// TestRdkafkaDeleteRecords: librdkafka's admin client deletes records on
// an RF 3 topic of a three-broker cluster (it finds each partition's
// leader itself), reads the low watermark back, and gets
// OFFSET_OUT_OF_RANGE above the high watermark.
func TestRdkafkaDeleteRecords(t *testing.T) {
	bin := rdkafkaDeleteRecords(t)
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "rd", 1, 3, nil)
	ctx := interoptest.Context(t)
	cl := c.Client(t, kgo.DefaultProduceTopic("rd"), kgo.RequiredAcks(kgo.AllISRAcks()))
	for range 6 { // one batch per record: offsets 0-5
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr())
	}
	run := func(arg string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, strings.Join(c.Seeds(), ","), "rd", arg)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		require.NoError(t, cmd.Run(), "delete_records rd %s\nstderr: %s", arg, errOut.String())
		return strings.TrimSpace(out.String())
	}
	assert.Equal(t, "0 4 NO_ERROR", run("0=4"))
	assert.Equal(t, "0 6 NO_ERROR", run("0=-1"), "-1 (RD_KAFKA_OFFSET_END) is the high watermark")
	assert.Regexp(t, `^0 -?\d+ OFFSET_OUT_OF_RANGE$`, run("0=99"))

	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, "rd")
	require.NoError(t, err)
	s, ok := starts.Lookup("rd", 0)
	require.True(t, ok)
	require.NoError(t, s.Err)
	assert.Equal(t, int64(6), s.Offset, "franz-go sees the start librdkafka moved")
}

// TestRdkafkaAlterConfigs: librdkafka's AlterConfigs (the whole set) and
// DescribeConfigs against a three-broker cluster: the change shows as
// DYNAMIC_TOPIC_CONFIG to librdkafka and to franz-go, a second call
// replaces it, and a bad value is INVALID_CONFIG with the reason.
func TestRdkafkaAlterConfigs(t *testing.T) {
	bin := rdkafkaProgram(t, "configs")
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "rc", 1, 3, nil)
	ctx := interoptest.Context(t)
	run := func(args ...string) map[string]string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{strings.Join(c.Seeds(), ","), "rc"}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		require.NoError(t, cmd.Run(), "configs rc %v\nstderr: %s", args, errOut.String())
		lines := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			k, v, _ := strings.Cut(l, " ")
			lines[k] = v
		}
		return lines
	}
	got := run("retention.ms=60000", "max.message.bytes=4096")
	assert.Equal(t, "NO_ERROR ", got["altered"])
	// librdkafka sends DescribeConfigs to any broker: the others catch up.
	require.Eventually(t, func() bool {
		got = run()
		return got["retention.ms"] == "60000 DYNAMIC_TOPIC_CONFIG" && got["max.message.bytes"] == "4096 DYNAMIC_TOPIC_CONFIG"
	}, 10*time.Second, 50*time.Millisecond, "described: %v", got)
	assert.Equal(t, "1 DEFAULT_CONFIG", got["min.insync.replicas"])

	got = run("retention.bytes=1048576")
	assert.Equal(t, "NO_ERROR ", got["altered"])
	require.Eventually(t, func() bool {
		got = run()
		return got["retention.bytes"] == "1048576 DYNAMIC_TOPIC_CONFIG" && got["retention.ms"] == "604800000 DEFAULT_CONFIG"
	}, 10*time.Second, 50*time.Millisecond, "AlterConfigs replaces the set: %v", got)

	rcs, err := kadm.NewClient(c.Client(t)).DescribeTopicConfigs(ctx, "rc")
	require.NoError(t, err)
	rc, err := rcs.On("rc", nil)
	require.NoError(t, err)
	for _, cfg := range rc.Configs {
		if cfg.Key == "retention.bytes" {
			assert.Equal(t, "1048576", cfg.MaybeValue(), "franz-go sees what librdkafka set")
		}
	}

	got = run("retention.ms=soon")
	assert.Regexp(t, `^INVALID_CONFIG .*"soon" is not an integer`, got["altered"])
}
