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
// and kafka-python 2.0 bindings lack it), with the C compiler against
// librdkafka-dev. Without them the test skips, except under CI, where
// .ci/run installs librdkafka-dev.
func rdkafkaDeleteRecords(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "delete_records")
	cc, err := exec.LookPath("cc")
	var out []byte
	if err == nil {
		out, err = exec.Command(cc, "-Wall", "-o", bin, filepath.Join("testdata", "delete_records.c"), "-lrdkafka").CombinedOutput()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("cannot build testdata/delete_records.c but CI is set: .ci/run installs librdkafka-dev: %v\n%s", err, out)
		}
		t.Skipf("cannot build testdata/delete_records.c (apt-get install librdkafka-dev; set CI to make this a failure): %v\n%s", err, out)
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
