package group

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/group/grouptest"
)

func TestBatchesAreRealKafkaBatches(t *testing.T) {
	recs := []Record{
		{Key: offsetKey("g", TopicPartition{"t", 3}), Value: offsetValue(Offset{Offset: 42, LeaderEpoch: 5, Metadata: "m", CommitTime: t0})},
		{Key: metadataKey("g")}, // tombstone
	}
	b := encodeBatch(recs, t0)
	h, err := batch.Parse(b)
	require.NoError(t, err, "the partition layer's validator accepts it")
	assert.Equal(t, int32(2), h.NumRecords)
	assert.Equal(t, int64(-1), h.ProducerID)

	decoded := batchtest.MustDecode(t, b)
	require.Len(t, decoded, 2)
	assert.Equal(t, t0.UnixMilli(), decoded[0].Timestamp)
	var k kmsg.OffsetCommitKey
	require.NoError(t, k.ReadFrom(decoded[0].Key))
	assert.Equal(t, kmsg.OffsetCommitKey{Version: 1, Group: "g", Topic: "t", Partition: 3}, k)
	var v kmsg.OffsetCommitValue
	require.NoError(t, v.ReadFrom(decoded[0].Value))
	assert.Equal(t, int64(42), v.Offset)
	assert.Equal(t, int32(5), v.LeaderEpoch)
	assert.Equal(t, "m", v.Metadata)
	assert.Equal(t, t0.UnixMilli(), v.CommitTimestamp)
	assert.Nil(t, decoded[1].Value, "a tombstone has a null value")

	var seen []int64
	next, err := decodeBatches(b, func(off int64, r kmsg.Record) { seen = append(seen, off) }, func(err error) { t.Fatal(err) })
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 1}, seen)
	assert.Equal(t, int64(2), next)
}

func TestDecodeBatchesRejectsCorruption(t *testing.T) {
	good := encodeBatch([]Record{{Key: metadataKey("g"), Value: []byte("v")}}, t0)
	cases := map[string]func([]byte) []byte{
		"flipped byte":     func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"truncated":        func(b []byte) []byte { return b[:len(b)-3] },
		"short header":     func(b []byte) []byte { return b[:40] },
		"length too small": func(b []byte) []byte { b[11] = 10; return b },
	}
	for name, corrupt := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeBatches(corrupt(bytes.Clone(good)), func(int64, kmsg.Record) {}, func(error) {})
			require.Error(t, err)
		})
	}
}

func newLogWith(t *testing.T, batches ...[]byte) *grouptest.Log {
	t.Helper()
	l := grouptest.NewMemLog()
	for _, b := range batches {
		_, err := l.Append(b)
		require.NoError(t, err)
	}
	return l
}

func TestReplayLatestValueWins(t *testing.T) {
	tp0, tp1 := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	g := NewGroup("g", testSettings(), t0)
	g.protocolType, g.protocol, g.generation, g.leader = "consumer", "range", 4, "m1"
	g.members = []*member{{id: "m1", instanceID: "i1", protocols: []Protocol{{"range", []byte("sub")}}, assignment: []byte("asg"),
		sessionTimeout: session, rebalanceTimeout: rebal, clientID: "c", clientHost: "h"}}
	meta := g.metadataRecord(t0)
	at := func(o int64) Record {
		return Record{Key: offsetKey("g", tp0), Value: offsetValue(Offset{Offset: o, LeaderEpoch: -1, CommitTime: t0})}
	}
	log := newLogWith(t,
		encodeBatch([]Record{at(1), {Key: offsetKey("g", tp1), Value: offsetValue(Offset{Offset: 9})}}, t0),
		encodeBatch([]Record{at(2), meta}, t0),
		encodeBatch([]Record{{Key: offsetKey("g", tp1)}}, t0), // tombstone
		encodeBatch([]Record{at(3)}, t0),
		// A deleted group: metadata and offsets tombstoned.
		encodeBatch([]Record{{Key: offsetKey("gone", tp0), Value: offsetValue(Offset{Offset: 1})}}, t0),
		encodeBatch([]Record{{Key: offsetKey("gone", tp0)}, {Key: metadataKey("gone")}}, t0),
		// An offsets-only group (a client that assigns itself).
		encodeBatch([]Record{{Key: offsetKey("simple", tp1), Value: offsetValue(Offset{Offset: 77})}}, t0),
	)
	res, err := replay(log, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	found := res.groups
	require.Len(t, found, 2, "the deleted group is gone")
	assert.Equal(t, map[string][]byte{
		string(offsetKey("g", tp0)):      at(3).Value,
		string(metadataKey("g")):         meta.Value,
		string(offsetKey("simple", tp1)): offsetValue(Offset{Offset: 77}),
	}, res.live, "live: the latest value of every key not tombstoned")
	assert.Equal(t, log.EndOffset(), res.end)

	later := t0.Add(time.Hour)
	rg := restoreGroup("g", found["g"], testSettings(), later)
	assert.Equal(t, Stable, rg.State())
	assert.Equal(t, int32(4), rg.Generation())
	o, ok := rg.Committed(tp0)
	require.True(t, ok)
	assert.Equal(t, int64(3), o.Offset)
	_, ok = rg.Committed(tp1)
	assert.False(t, ok, "tombstoned")
	d := rg.Describe()
	assert.Equal(t, "m1", d.Leader)
	require.Len(t, d.Members, 1)
	assert.Equal(t, MemberDescription{MemberID: "m1", InstanceID: "i1", ClientID: "c", ClientHost: "h",
		Metadata: []byte("sub"), Assignment: []byte("asg")}, d.Members[0])
	assert.Equal(t, later.Add(session), rg.NextDeadline(), "sessions start at load")
	assertCode(t, nil, rg.Heartbeat(later, "m1", "i1", 4))

	sg := restoreGroup("simple", found["simple"], testSettings(), later)
	assert.Equal(t, Empty, sg.State())
	o, _ = sg.Committed(tp1)
	assert.Equal(t, int64(77), o.Offset)
}

func TestReplaySkipsWhatItDidNotWrite(t *testing.T) {
	compressed := batchtest.Make(t, batchtest.Spec{
		Values: [][]byte{offsetValue(Offset{Offset: 5})},
		Keys:   [][]byte{offsetKey("z", TopicPartition{"t", 0})},
		Codec:  batch.CodecGzip,
	})
	unknownKey := []byte{0, 9, 1, 2}
	log := newLogWith(t,
		encodeBatch([]Record{{Key: offsetKey("g", TopicPartition{"t", 0}), Value: offsetValue(Offset{Offset: 1})}}, t0),
		compressed,
		encodeBatch([]Record{{Key: unknownKey, Value: []byte("x")}, {Key: []byte{1}}}, t0),
		encodeBatch([]Record{{Key: offsetKey("g", TopicPartition{"t", 0}), Value: []byte{0}}}, t0), // undecodable value
	)
	var logged bytes.Buffer
	res, err := replay(log, slog.New(slog.NewTextHandler(&logged, nil)))
	require.NoError(t, err)
	found := res.groups
	require.Contains(t, found, "g")
	assert.NotContains(t, found, "z")
	assert.Equal(t, int64(1), found["g"].offsets[TopicPartition{"t", 0}].Offset)
	assert.Equal(t, 4, bytes.Count(logged.Bytes(), []byte("skipping")), logged.String())
	assert.Equal(t, map[string][]byte{
		string(offsetKey("g", TopicPartition{"t", 0})): offsetValue(Offset{Offset: 1}),
	}, res.live, "what replay skipped is not live: a compaction drops it, and replay's state stays the same")
}

func TestReplayFailsOnCorruptLog(t *testing.T) {
	b := encodeBatch([]Record{{Key: metadataKey("g"), Value: []byte("v")}}, t0)
	b[len(b)-1] ^= 0xff
	log := newLogWith(t, b)
	_, err := replay(log, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "crc")
}
