package interoptest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMurmur2Vectors pins the hash to the values Kafka's UtilsTest and
// librdkafka's rdmurmur2 unit test publish.
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
			assert.Equal(t, v.want, Murmur2([]byte(v.in)))
		})
	}
}

func TestMurmur2PartitionIsNonNegative(t *testing.T) {
	// "foobar" hashes negative: the sign bit is cleared, not abs().
	h := int32(-790332482)
	assert.Equal(t, (h&0x7fffffff)%7, Murmur2Partition([]byte("foobar"), 7))
	for _, k := range []string{"", "a", "21", "foobar"} {
		p := Murmur2Partition([]byte(k), 5)
		assert.True(t, p >= 0 && p < 5, "key %q -> %d", k, p)
	}
}
