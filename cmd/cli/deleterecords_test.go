package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeleteRecords: delete-records moves one partition's log start, or
// every partition's to its high watermark, prints the low watermarks, and
// fails on a partition's error or a missing -offset.
func TestDeleteRecords(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "dr", "-partitions", "2")
		ok(t, addr, "", "produce", "dr", "-partition", "0", "a", "b")
		ok(t, addr, "", "produce", "dr", "-partition", "0", "c")
		ok(t, addr, "", "produce", "dr", "-partition", "1", "d")

		out := lines(ok(t, addr, "", "delete-records", "dr", "-partition", "0", "-offset", "2"))
		require.Len(t, out, 2, "header and one partition")
		assert.Equal(t, []string{"PARTITION", "LOW-WATERMARK"}, strings.Fields(out[0]))
		assert.Equal(t, []string{"0", "2"}, strings.Fields(out[1]))
		desc := lines(ok(t, addr, "", "topics", "describe", "dr"))
		require.GreaterOrEqual(t, len(desc), 4)
		assert.Equal(t, "2", strings.Fields(desc[2])[5], "partition 0's log start")
		consumed := ok(t, addr, "", "consume", "dr", "-partition", "0", "-from-beginning", "-n", "1")
		assert.Equal(t, "c\n", consumed, "a consumer from the beginning starts at the new log start")

		out = lines(ok(t, addr, "", "delete-records", "-offset", "-1", "dr"))
		require.Len(t, out, 3, "every partition")
		assert.Equal(t, []string{"0", "3"}, strings.Fields(out[1]))
		assert.Equal(t, []string{"1", "1"}, strings.Fields(out[2]))

		r := cli(t, addr, "", "delete-records", "dr", "-partition", "0", "-offset", "99")
		assert.Equal(t, 1, r.code, "above the high watermark")
		assert.Contains(t, r.stdout, "OFFSET_OUT_OF_RANGE")
		assert.Contains(t, r.stderr, "OFFSET_OUT_OF_RANGE")

		r = cli(t, addr, "", "delete-records", "dr")
		assert.Equal(t, 2, r.code, "-offset is required")
		assert.Contains(t, r.stderr, "-offset")
		r = cli(t, addr, "", "delete-records", "missing", "-offset", "0")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "UNKNOWN_TOPIC_OR_PARTITION")
	})
}
