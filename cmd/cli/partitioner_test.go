package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/interop/interoptest"
)

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
			assert.Equal(t, interoptest.Murmur2Partition([]byte(key), partitions), int32(p), "key %q", key)
			used[fields[0][:1]] = true
		}
		assert.Greater(t, len(used), 3, "keys should spread over partitions")
	})
}
