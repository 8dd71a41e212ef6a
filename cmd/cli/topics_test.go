package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTopicsCreateListDescribeDelete(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		out := ok(t, addr, "", "topics", "create", "orders", "-partitions", "4")
		assert.Equal(t, "created topic orders with 4 partitions\n", out)
		ok(t, addr, "", "topics", "create", "-partitions", "2", "audit")

		r := cli(t, addr, "", "topics", "create", "orders", "-partitions", "4")
		assert.Equal(t, 1, r.code, "creating an existing topic must fail")
		assert.Contains(t, r.stderr, "TOPIC_ALREADY_EXISTS")

		assert.Equal(t, []string{"audit", "orders"}, lines(ok(t, addr, "", "topics", "list")))

		ok(t, addr, "", "produce", "orders", "-partition", "3", "x", "y")
		desc := lines(ok(t, addr, "", "topics", "describe", "orders"))
		require.GreaterOrEqual(t, len(desc), 6, "header, column names and 4 partitions")
		assert.True(t, strings.HasPrefix(desc[0], "topic orders "), desc[0])
		assert.Contains(t, desc[0], "partitions 4")
		assert.Equal(t, []string{"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "START", "END"}, strings.Fields(desc[1]))
		p3 := strings.Fields(desc[5])
		require.Len(t, p3, 7, desc[5])
		assert.Equal(t, "3", p3[0])
		assert.Equal(t, "0", p3[5], "log start")
		assert.Equal(t, "2", p3[6], "log end after two records")
		assert.True(t, strings.HasPrefix(desc[6], "configs:"), desc[6])

		ok(t, addr, "", "topics", "delete", "audit")
		assert.Equal(t, []string{"orders"}, lines(ok(t, addr, "", "topics", "list")))

		r = cli(t, addr, "", "topics", "describe", "missing")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "UNKNOWN_TOPIC_OR_PARTITION")
	})
}

func TestMeta(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "m1", "-partitions", "3")
		out := ok(t, addr, "", "meta")
		ls := lines(out)
		require.NotEmpty(t, ls)
		assert.True(t, strings.HasPrefix(ls[0], "cluster"), ls[0])
		assert.Regexp(t, `(?m)^controller\s+\d+$`, out)
		assert.Contains(t, out, addr, "the broker's advertised address")
		assert.Regexp(t, `(?m)^m1\s+3\s+1\s*$`, out)
	})
}
