package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/interop/interoptest"
)

// configRows are describe's rows as key -> "value SOURCE".
func configRows(t *testing.T, out string) map[string]string {
	t.Helper()
	ls := lines(out)
	require.NotEmpty(t, ls)
	require.Equal(t, []string{"KEY", "VALUE", "SOURCE"}, strings.Fields(ls[0]))
	rows := map[string]string{}
	for _, l := range ls[1:] {
		f := strings.Fields(l)
		require.Len(t, f, 3, l)
		rows[f[0]] = f[1] + " " + f[2]
	}
	return rows
}

func TestConfigDescribeSetDelete(t *testing.T) {
	addr := interoptest.Broker("memory").Start(t, 1).Addr
	ok(t, addr, "", "topics", "create", "cfg", "-partitions", "1")
	assert.Empty(t, configRows(t, ok(t, addr, "", "config", "describe", "cfg")), "nothing set")
	all := configRows(t, ok(t, addr, "", "config", "describe", "cfg", "-all"))
	assert.Equal(t, "604800000 DEFAULT_CONFIG", all["retention.ms"])

	out := ok(t, addr, "", "config", "set", "cfg", "retention.ms=60000", "max.message.bytes=2048")
	assert.Equal(t, "set 2 config(s) of topic cfg\n", out)
	assert.Equal(t, map[string]string{
		"retention.ms":      "60000 DYNAMIC_TOPIC_CONFIG",
		"max.message.bytes": "2048 DYNAMIC_TOPIC_CONFIG",
	}, configRows(t, ok(t, addr, "", "config", "describe", "cfg")))

	ok(t, addr, "", "config", "delete", "cfg", "max.message.bytes")
	assert.Equal(t, map[string]string{"retention.ms": "60000 DYNAMIC_TOPIC_CONFIG"},
		configRows(t, ok(t, addr, "", "config", "describe", "cfg")))

	r := cli(t, addr, "", "config", "set", "cfg", "retention.ms=soon")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "INVALID_CONFIG")
	assert.Contains(t, r.stderr, `"soon" is not an integer`, "the broker's reason")
	r = cli(t, addr, "", "config", "set", "cfg", "retention.ms")
	assert.Equal(t, 2, r.code, "not key=value")
	r = cli(t, addr, "", "config", "describe")
	assert.Equal(t, 2, r.code, "no topic")

	ok(t, addr, "", "config", "set", "-cluster", "unclean.leader.election.enable=true")
	assert.Equal(t, "true DYNAMIC_DEFAULT_BROKER_CONFIG",
		configRows(t, ok(t, addr, "", "config", "describe", "-cluster"))["unclean.leader.election.enable"])
	r = cli(t, addr, "", "config", "set", "-cluster", "broker.id=9")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "cannot update these configs dynamically")
}
