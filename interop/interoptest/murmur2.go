package interoptest

import "encoding/binary"

// Murmur2 is Kafka's partitioner hash, written from the algorithm
// (MurmurHash2, 32-bit, seed 0x9747b28c, little-endian 4-byte blocks) so that
// tests do not trust the client they check.
func Murmur2(data []byte) int32 {
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

// Murmur2Partition is the partition the Java client's default partitioner
// picks for a keyed record (Utils.toPositive(murmur2(key)) % partitions), as
// librdkafka's murmur2_random and franz-go's StickyKeyPartitioner do.
func Murmur2Partition(key []byte, partitions int32) int32 {
	return int32(uint32(Murmur2(key))&0x7fffffff) % partitions
}
