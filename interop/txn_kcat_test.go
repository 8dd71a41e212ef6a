package interop

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/interop/interoptest"
)

// TestKcatReadCommitted: franz-go commits, aborts and commits transactions
// and leaves one open; kcat (librdkafka) with isolation.level=
// read_committed reads exactly the committed records and stops at the
// open transaction, and with read_uncommitted reads every record below the
// high watermark, aborted ones included.
func TestKcatReadCommitted(t *testing.T) {
	eachServer(t, func(t *testing.T, s *interoptest.Server) {
		createTopic(t, s.Addr, "txk", 2)
		ctx := interoptest.Context(t)
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr), kgo.TransactionalID("kcat-txn"), kgo.DefaultProduceTopic("txk"),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		require.NoError(t, err)
		defer cl.Close()
		var committed, all []string
		for i, end := range []string{"commit", "abort", "commit", "open"} {
			require.NoError(t, cl.BeginTransaction())
			for j := range 3 {
				v := fmt.Sprintf("%s-%d-%d", end, i, j)
				require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte(v)}).FirstErr())
				all = append(all, v)
				if end == "commit" {
					committed = append(committed, v)
				}
			}
			if end != "open" {
				require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(end == "commit")))
			}
		}
		values := func(isolation string) []string {
			var out []string
			for _, r := range parseKcat(t, kcat(t, "", "-C", "-b", s.Addr, "-t", "txk", "-o", "beginning", "-e", "-q",
				"-X", "isolation.level="+isolation, "-f", "%p\t%o\t%k\t%s\n")) {
				out = append(out, string(r.Value))
			}
			return out
		}
		assert.ElementsMatch(t, committed, values("read_committed"))
		assert.ElementsMatch(t, all, values("read_uncommitted"))
		require.NoError(t, cl.EndTransaction(ctx, kgo.TryAbort))
	})
}
