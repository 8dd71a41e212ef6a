package main

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// murmur2 is Kafka's partitioner hash, written here from the algorithm
// (MurmurHash2, 32-bit, seed 0x9747b28c, little-endian 4-byte blocks) so the
// test does not trust the client it checks.
func murmur2(data []byte) int32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	h := uint32(seed) ^ uint32(len(data))
	n := len(data) / 4
	for i := range n {
		k := binary.LittleEndian.Uint32(data[4*i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[4*n:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// javaPartition is the Java client's default partitioner for a keyed record
// (Utils.toPositive(murmur2(key)) % numPartitions), which librdkafka's
// murmur2_random matches.
func javaPartition(key []byte, partitions int32) int32 {
	return int32(uint32(murmur2(key))&0x7fffffff) % partitions
}

// TestMurmur2Vectors pins the test's own hash to the values Kafka's
// UtilsTest and librdkafka's rdmurmur2 unit test publish.
func TestMurmur2Vectors(t *testing.T) {
	vectors := []struct {
		in   string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
		{"1", -1993445489},
		{"12", 126087238},
		{"123", -267702483},
		{"1234", -1614185708},
		{"12345", -1188365604},
	}
	for _, v := range vectors {
		t.Run(v.in, func(t *testing.T) {
			assert.Equal(t, v.want, murmur2([]byte(v.in)))
		})
	}
}

// TestKeysLandWhereJavaPutsThem produces keyed records through the CLI and
// checks each landed on the partition the Java client would choose.
func TestKeysLandWhereJavaPutsThem(t *testing.T) {
	const partitions = 7
	eachTarget(t, partitions, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "keyed", "-partitions", strconv.Itoa(partitions))
		var in strings.Builder
		keys := []string{"21", "foobar", "abc", "a-little-bit-long-string"}
		for i := range 60 {
			keys = append(keys, fmt.Sprintf("user-%d", i))
		}
		for _, k := range keys {
			fmt.Fprintf(&in, "%s:v-%s\n", k, k)
		}
		ok(t, addr, in.String(), "produce", "keyed", "-key-delim", ":")
		// A single -key flag goes through the same partitioner.
		ok(t, addr, "", "produce", "keyed", "-key", "foobar", "flag-keyed")

		out := ok(t, addr, "", "consume", "keyed", "-from-beginning", "-n", strconv.Itoa(len(keys)+1), "-keys", "-offsets")
		got := lines(out)
		require.Len(t, got, len(keys)+1)
		used := map[string]bool{}
		for _, l := range got {
			fields := strings.SplitN(l, "\t", 3)
			require.Len(t, fields, 3, "line %q", l)
			p, err := strconv.Atoi(strings.SplitN(fields[0], "@", 2)[0])
			require.NoError(t, err)
			key := fields[1]
			assert.Equal(t, javaPartition([]byte(key), partitions), int32(p), "key %q", key)
			used[fields[0][:1]] = true
		}
		assert.Greater(t, len(used), 3, "keys should spread over partitions")
	})
}
