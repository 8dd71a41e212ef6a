package server

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func ts() string { return time.Now().Format("15:04:05.000") }

func TestZZRestart(t *testing.T) {
	bin := brokerBinary(t)
	ctx := context.Background()
	c, err := StartCluster(ctx, ClusterConfig{Bin: bin, Engine: "segment", Brokers: 3, Dir: t.TempDir(), Sync: "always", Log: os.Stderr, Args: []string{"-log-level", "info"}})
	require.NoError(t, err)
	defer c.Close()
	cl, err := c.Client()
	require.NoError(t, err)
	adm := kadm.NewClient(cl)
	for i := range 40 {
		var names []string
		for j := range 25 {
			names = append(names, fmt.Sprintf("s%d-%d", i, j))
		}
		_, err := adm.CreateTopics(ctx, 10, 1, nil, names...)
		require.NoError(t, err)
	}
	time.Sleep(5 * time.Second)
	m, err := adm.Metadata(ctx, "s0-0")
	require.NoError(t, err)
	fmt.Fprintf(os.Stderr, "=== stop %v\n", ts())
	require.NoError(t, c.Stop(2))
	fmt.Fprintf(os.Stderr, "=== start %v\n", ts())
	require.NoError(t, c.Start(ctx, 2))
	fmt.Fprintf(os.Stderr, "=== listening %v\n", ts())
	var p int32 = -1
	for _, pd := range m.Topics["s0-0"].Partitions {
		if pd.Leader == 2 {
			p = pd.Partition
		}
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(10*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }))
	require.NoError(t, err)
	require.NoError(t, pcl.ProduceSync(ctx, &kgo.Record{Topic: "s0-0", Partition: p, Value: []byte("x")}).FirstErr())
	fmt.Fprintf(os.Stderr, "=== produced %v\n", ts())
}
