package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// TestRdkafkaTransactions: librdkafka's transactional producer (Debian's
// confluent-kafka-python 1.7 over librdkafka 2.0, which speaks the first
// transaction version: AddPartitionsToTxn and AddOffsetsToTxn before its
// writes) copies a topic in transactions that commit the copier's input
// offsets, aborting every fourth; then librdkafka read_committed and
// read_uncommitted consumers read the copy. Against one broker on every
// durable engine and a three-broker cluster at RF 3.
func TestRdkafkaTransactions(t *testing.T) {
	py := interoptest.Python(t, "confluent_kafka", "python3-confluent-kafka")
	for _, name := range engine.Names() {
		d, err := engine.Lookup(name)
		require.NoError(t, err)
		if !d.Caps.Durable {
			continue
		}
		opts := []brokertest.Option{brokertest.Engine(name), brokertest.Configure(func(c *broker.Config) {
			c.EngineOptions.Sync = engine.SyncAlways
		})}
		t.Run(name+"/1-broker", func(t *testing.T) {
			b := brokertest.Start(t, opts...)
			runRdkafkaCopier(t, py, []string{b.Addr}, 1)
		})
		if name != "segment" {
			continue // the cluster's transaction paths are the engines' same; one is enough here
		}
		t.Run(name+"/3-brokers", func(t *testing.T) {
			runRdkafkaCopier(t, py, brokertest.StartCluster(t, 3, opts...).Seeds(), 3)
		})
	}
}

func runRdkafkaCopier(t *testing.T, py string, seeds []string, rf int16) {
	const records = 2000
	ctx := interoptest.Context(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("rdin"))
	require.NoError(t, err)
	defer cl.Close()
	_, err = kadm.NewClient(cl).CreateTopics(ctx, 3, rf, nil, "rdin", "rdout")
	require.NoError(t, err)
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, nil)
	}
	require.NoError(t, cl.Flush(ctx))

	cmd := exec.CommandContext(ctx, py, "testdata/rdkafka_txn.py", strings.Join(seeds, ","), "rdin", "rdout", fmt.Sprint(records))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "rdkafka_txn.py\nstderr: %s", errOut.String())
	var res struct {
		Committed       []int    `json:"committed_txns"`
		Aborted         []int    `json:"aborted_txns"`
		ReadCommitted   []string `json:"read_committed"`
		ReadUncommitted []string `json:"read_uncommitted"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), "rdkafka_txn.py output %q", out.String())
	require.NotEmpty(t, res.Aborted, "the copier aborted no transaction: nothing tested")

	aborted := map[string]bool{}
	for _, n := range res.Aborted {
		aborted[fmt.Sprint(n)] = true
	}
	copies := map[string]int{}
	for _, v := range res.ReadCommitted {
		in, txn, ok := strings.Cut(v, ":")
		require.True(t, ok, "output value %q", v)
		require.False(t, aborted[txn], "read_committed returned %q, written by aborted transaction %s", v, txn)
		copies[in]++
	}
	for i := range records {
		require.Equal(t, 1, copies[fmt.Sprint(i)], "input record %d is in the committed output %d times, not once", i, copies[fmt.Sprint(i)])
	}
	abortedSeen := 0
	for _, v := range res.ReadUncommitted {
		_, txn, _ := strings.Cut(v, ":")
		if aborted[txn] {
			abortedSeen++
		}
	}
	require.Positive(t, abortedSeen, "read_uncommitted saw no aborted record: the aborts wrote nothing")
	require.Len(t, res.ReadUncommitted, len(res.ReadCommitted)+abortedSeen)
}
