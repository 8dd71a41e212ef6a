package broker_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/broker/harness"
)

// TestMetadataAfterRestartOnANewAddress: a broker started again on another
// address answers its first Metadata with that address, not the one of its
// last incarnation that its metadata log still holds until the new
// registration is in. A client told the old address dials a dead port and
// waits out its metadata refresh interval (5 s for franz-go) before it
// asks again.
func TestMetadataAfterRestartOnANewAddress(t *testing.T) {
	b := brokertest.Start(t, brokertest.Engine("segment"))
	b.CreateTopic(t, "t", 1)
	require.NoError(t, b.Close())
	cfg := b.Config
	cfg.AdvertisedAddr = "" // the new listener's

	for i := range 5 { // each start races its registration against the request
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		again, err := harness.ServeInProcess(cfg, ln, nil)
		require.NoError(t, err)
		_, port, err := net.SplitHostPort(ln.Addr().String())
		require.NoError(t, err)

		cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr("t")
		req.Topics = append(req.Topics, topic)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		cl.Close()
		require.NoError(t, err)
		require.Len(t, resp.Brokers, 1, "start %d", i)
		require.Equal(t, port, strconv.Itoa(int(resp.Brokers[0].Port)), "start %d: the broker's own address", i)
		require.Len(t, resp.Topics, 1)
		require.Equal(t, b.Config.NodeID, resp.Topics[0].Partitions[0].Leader, "start %d: it leads its partition", i)
		require.NoError(t, again.Close())
	}
}
