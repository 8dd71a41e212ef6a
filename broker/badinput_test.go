package broker_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/clock"
)

// header is a request header v1 (client id null) for key and version.
func header(key, version int16) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 7)
	return binary.BigEndian.AppendUint16(b, 0xffff)
}

func TestBadFraming(t *testing.T) {
	b := brokertest.Start(t, brokertest.Configure(func(c *broker.Config) { c.MaxFrameBytes = 1024 }))
	for _, tc := range []struct {
		name string
		send []byte
		// halfClose ends the client's side after send.
		halfClose bool
	}{
		{name: "frame longer than the maximum", send: binary.BigEndian.AppendUint32(nil, 2048)},
		{name: "length of 2 GiB", send: binary.BigEndian.AppendUint32(nil, 0x7fffffff)},
		{name: "negative length", send: binary.BigEndian.AppendUint32(nil, 0xffffffff)},
		{name: "zero length", send: binary.BigEndian.AppendUint32(nil, 0)},
		{name: "truncated frame", send: append(binary.BigEndian.AppendUint32(nil, 100), header(3, 1)...), halfClose: true},
		{name: "truncated length", send: []byte{0, 0}, halfClose: true},
		{name: "header shorter than its fixed part", send: frame([]byte{0, 3, 0})},
		{name: "client id longer than the frame", send: frame(append(header(3, 1)[:8], 0x7f, 0xff))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, b.Addr)
			c.write(tc.send)
			if tc.halfClose {
				require.NoError(t, c.c.(*net.TCPConn).CloseWrite())
			}
			c.expectClosed(tc.name)
			metadataWorks(t, b.Addr)
		})
	}
}

func TestUnknownAPIsAndVersions(t *testing.T) {
	b := brokertest.Start(t)
	for _, tc := range []struct {
		name         string
		key, version int16
	}{
		{"unknown key", 1000, 0},
		{"negative key", -1, 0},
		{"known to kmsg but not served (DescribeUserScramCredentials)", 50, 0},
		{"Metadata above its range", 3, 13},
		{"Fetch below its range", 1, 3},
		{"ListOffsets v0", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, b.Addr)
			c.write(frame(append(header(tc.key, tc.version), make([]byte, 16)...)))
			c.expectClosed(tc.name)
			metadataWorks(t, b.Addr)
		})
	}
}

func TestApiVersions(t *testing.T) {
	b := brokertest.Start(t)
	t.Run("above our range: v0 response with our ranges", func(t *testing.T) {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(5)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
		c := dialRaw(t, b.Addr)
		frame := c.encode(req)
		binary.BigEndian.PutUint16(frame[6:], 6) // a version past kmsg's and ours
		c.write(frame)
		body := c.readFrame()
		require.Equal(t, c.corr, int32(binary.BigEndian.Uint32(body)), "correlation id")
		resp := kmsg.NewPtrApiVersionsResponse() // v0: the fallback's version
		require.NoError(t, resp.ReadFrom(body[4:]), "a v0 response with a v0 header")
		assert.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
		assert.Contains(t, resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: 18, MinVersion: 0, MaxVersion: 5})
		assert.Contains(t, resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: 0, MinVersion: 0, MaxVersion: 12}, "the other ranges too")
	})
	t.Run("v5 checks the cluster and node it names", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			cluster *string
			node    int32
			want    int16
		}{
			{"bootstrapping", nil, -1, 0},
			{"this broker", kmsg.StringPtr(broker.DefaultClusterID), 1, 0},
			{"another cluster", kmsg.StringPtr("other"), 1, kerr.RebootstrapRequired.Code},
			{"another node", kmsg.StringPtr(broker.DefaultClusterID), 7, kerr.RebootstrapRequired.Code},
			{"cluster without node", kmsg.StringPtr(broker.DefaultClusterID), -1, kerr.InvalidRequest.Code},
		} {
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(5)
			req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
			req.ClusterID, req.NodeID = tc.cluster, tc.node
			resp := dialRaw(t, b.Addr).roundTrip(req).(*kmsg.ApiVersionsResponse)
			assert.Equal(t, tc.want, resp.ErrorCode, tc.name)
		}
	})
	t.Run("features: transaction.version", func(t *testing.T) {
		for v := int16(3); v <= 5; v++ {
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(v)
			req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
			resp := dialRaw(t, b.Addr).roundTrip(req).(*kmsg.ApiVersionsResponse)
			require.Len(t, resp.FinalizedFeatures, 1, "v%d", v)
			assert.Equal(t, "transaction.version", resp.FinalizedFeatures[0].Name)
			assert.Equal(t, int16(2), resp.FinalizedFeatures[0].MaxVersionLevel)
			require.Len(t, resp.SupportedFeatures, 1)
			assert.Equal(t, int16(2), resp.SupportedFeatures[0].MaxVersion)
		}
	})
	t.Run("advertises what is served and nothing else", func(t *testing.T) {
		for v := int16(0); v <= 5; v++ {
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(v)
			req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1.0"
			resp := dialRaw(t, b.Addr).roundTrip(req).(*kmsg.ApiVersionsResponse)
			require.Zero(t, resp.ErrorCode, "v%d", v)
			got := map[int16][2]int16{}
			for _, k := range resp.ApiKeys {
				got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
			}
			for key, want := range map[int16][2]int16{
				0: {0, 12}, 1: {4, 15}, 2: {1, 7}, 3: {0, 12}, 19: {0, 7}, 23: {0, 4},
				20: {0, 6}, 22: {0, 4}, 32: {0, 4}, 37: {0, 3}, 45: {0, 1}, 46: {0, 0},
				24: {0, 5}, 25: {0, 4}, 26: {0, 5}, 27: {0, 2}, 28: {0, 5}, 18: {0, 5},
			} {
				assert.Equal(t, want, got[key], "v%d: %s range", v, kmsg.NameForKey(key))
			}
			for _, key := range []int16{56, 62, 63, 67, 71, 72} {
				assert.NotContains(t, got, key, "v%d: %s must not be advertised", v, kmsg.NameForKey(key))
			}
		}
	})
	t.Run("bad software name", func(t *testing.T) {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "-bad name-", "1"
		resp := dialRaw(t, b.Addr).roundTrip(req).(*kmsg.ApiVersionsResponse)
		assert.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode)
	})
}

// TestHugeArrayCounts sends, for every served API and version, a request
// whose first field claims two billion elements (or two billion bytes). The
// broker must answer or close, not allocate for the claim, and keep serving.
func TestHugeArrayCounts(t *testing.T) {
	b := brokertest.Start(t)
	for key := int16(0); key < 100; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for version := int16(0); version <= req.MaxVersion(); version++ {
			req.SetVersion(version)
			body := header(key, version)
			if req.IsFlexible() {
				body = append(body, 0)                                  // header tags
				body = binary.AppendUvarint(body, 1<<31)                // compact array or string length
				body = append(body, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0) // and more claims
			} else {
				body = append(body, 0x7f, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff)
			}
			c := dialRaw(t, b.Addr)
			c.write(frame(body))
			// Either a response or a close; both are fine. A response
			// is read whole; then the connection must still work or be
			// closed, never hang.
			_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			var size [4]byte
			if n, err := c.c.Read(size[:1]); err == nil && n == 1 {
				continue
			}
		}
	}
	metadataWorks(t, b.Addr)
}

// produceRaw sends one Produce v9 of records to topic partition 0.
func produceRaw(t *testing.T, c *rawConn, topic string, acks int16, records []byte) *kmsg.ProduceResponse {
	t.Helper()
	return c.roundTrip(produceRequest(topic, acks, records)).(*kmsg.ProduceResponse)
}

// produceRequest is a Produce v9 of records to topic partition 0, allowed
// 10 s.
func produceRequest(topic string, acks int16, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = acks, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestBadBatches(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "bad", 1)
	good := batchtest.Plain(t, 3)
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want *kerr.Error
	}{
		{"bad CRC", func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }, kerr.CorruptMessage},
		{"wrong record count", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 5)
			batchtest.Recrc(b)
			return b
		}, kerr.CorruptMessage},
		{"length field that lies", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[8:], 1<<30)
			return b
		}, kerr.CorruptMessage},
		{"magic 1", func(b []byte) []byte { b[16] = 1; return b }, kerr.InvalidRecord},
		{"truncated batch", func(b []byte) []byte { return b[:40] }, kerr.CorruptMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, b.Addr)
			resp := produceRaw(t, c, "bad", -1, tc.edit(append([]byte(nil), good...)))
			assert.Equal(t, tc.want.Code, resp.Topics[0].Partitions[0].ErrorCode, "error code: %v", kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
			// The connection goes on; a good batch after it lands at 0.
			resp = produceRaw(t, c, "bad", -1, append([]byte(nil), good...))
			require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
		})
	}
	p, err := b.Partitions().Partition("bad", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(5*3), p.HighWatermark(), "only the good batches were stored")
}

// manualBroker starts a broker whose timeouts run on a manual clock.
func manualBroker(t *testing.T, frameTimeout, idleTimeout time.Duration) (*brokertest.Broker, *clock.Manual) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	b := brokertest.Start(t, brokertest.Configure(func(c *broker.Config) {
		c.Clock, c.FrameTimeout, c.IdleTimeout = clk, frameTimeout, idleTimeout
		// The test moves the clock by minutes: a session would expire at
		// every step and fence the broker from its own controller.
		c.Cluster.SessionTimeout = 1000 * time.Hour
	}))
	return b, clk
}

// closedWithin advances clk by step until the broker closes c (checked with
// a short real-time read), failing after about 10 real seconds.
func closedWithin(t *testing.T, c *rawConn, clk *clock.Manual, step time.Duration, each func()) time.Duration {
	t.Helper()
	var advanced time.Duration
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		clk.Advance(step)
		advanced += step
		if each != nil {
			each()
		}
		_ = c.c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := c.c.Read(make([]byte, 1)); err != nil {
			if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
				return advanced
			}
		}
	}
	t.Fatalf("connection still open after advancing the clock %v", advanced)
	return 0
}

func TestSlowClients(t *testing.T) {
	t.Run("one byte a minute", func(t *testing.T) {
		b, clk := manualBroker(t, 30*time.Second, 24*time.Hour)
		c := dialRaw(t, b.Addr)
		msg := frame(append(header(3, 1), 0, 0, 0, 0))
		i := 0
		advanced := closedWithin(t, c, clk, time.Minute, func() {
			if i < len(msg) {
				_, _ = c.c.Write(msg[i : i+1])
				i++
			}
		})
		assert.Less(t, i, len(msg), "closed before the frame completed")
		assert.LessOrEqual(t, advanced, 24*time.Hour, "closed by the frame timeout, not the idle one")
		metadataWorks(t, b.Addr)
	})
	t.Run("length that lies, then silence", func(t *testing.T) {
		b, clk := manualBroker(t, 30*time.Second, 24*time.Hour)
		c := dialRaw(t, b.Addr)
		c.write(append(binary.BigEndian.AppendUint32(nil, 50_000), header(3, 1)...))
		closedWithin(t, c, clk, 10*time.Second, nil)
		metadataWorks(t, b.Addr)
	})
	t.Run("idle connection", func(t *testing.T) {
		b, clk := manualBroker(t, 30*time.Second, 10*time.Minute)
		c := dialRaw(t, b.Addr)
		metadataWorks(t, b.Addr)
		closedWithin(t, c, clk, time.Minute, nil)
	})
}

// gauge reads a gauge without labels from the broker's metrics.
func gauge(t *testing.T, b *brokertest.Broker, name string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	b.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)`).FindStringSubmatch(rec.Body.String())
	require.NotNil(t, m, "gauge %s", name)
	n, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return int(n)
}

func openConns(t *testing.T, b *brokertest.Broker) int {
	return gauge(t, b, "minikafka_open_connections")
}

// TestClientThatDoesNotRead: responses pile up unread until the socket is
// full; after WriteTimeout on the injected clock the broker gives up on
// that connection and keeps serving others.
func TestClientThatDoesNotRead(t *testing.T) {
	b, clk := manualBroker(t, time.Minute, 24*time.Hour)
	b.CreateTopic(t, "big", 1)
	w := dialRaw(t, b.Addr)
	value := bytes.Repeat([]byte("x"), 100_000)
	for range 20 {
		produceRaw(t, w, "big", -1, batchtest.Make(t, batchtest.Spec{Values: [][]byte{value}}))
	}
	base := openConns(t, b)
	c := dialRaw(t, b.Addr)
	var wire []byte
	for range 64 {
		wire = append(wire, c.encode(fetchReq("big", 0, 0, 1))...)
	}
	go func() { _, _ = c.c.Write(wire) }() // blocks too once the broker stops reading
	deadline := time.Now().Add(10 * time.Second)
	for openConns(t, b) <= base {
		require.True(t, time.Now().Before(deadline), "the connection was never counted")
		time.Sleep(time.Millisecond)
	}
	for openConns(t, b) > base {
		require.True(t, time.Now().Before(deadline), "the connection that does not read is still open")
		clk.Advance(time.Minute)
		time.Sleep(10 * time.Millisecond)
	}
	metadataWorks(t, b.Addr)
}
