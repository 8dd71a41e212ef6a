package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupsListDescribeDelete: a franz-go group consumer reads and commits
// ten records of a two-partition topic and stays in the group; three more
// are produced. The CLI lists the group, describes its member, assignment,
// committed offsets and lag, refuses to delete it while it has a member,
// and deletes it once the member is gone.
func TestGroupsListDescribeDelete(t *testing.T) {
	eachTarget(t, 1, func(t *testing.T, addr string) {
		ok(t, addr, "", "topics", "create", "orders", "-partitions", "2")
		ok(t, addr, "", "produce", "orders", "-partition", "0", "a", "b", "c", "d", "e", "f")
		ok(t, addr, "", "produce", "orders", "-partition", "1", "g", "h", "i", "j")

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("reader"),
			kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(100*time.Millisecond))
		require.NoError(t, err)
		defer cl.Close()
		for n := 0; n < 10; {
			fs := cl.PollFetches(ctx)
			require.NoError(t, ctx.Err())
			n += fs.NumRecords()
		}
		require.NoError(t, cl.CommitUncommittedOffsets(ctx))
		ok(t, addr, "", "produce", "orders", "-partition", "1", "k", "l", "m")

		list := lines(ok(t, addr, "", "groups", "list"))
		require.Len(t, list, 2, "header and one group")
		assert.Equal(t, []string{"GROUP", "STATE", "TYPE"}, strings.Fields(list[0]))
		assert.Equal(t, []string{"billing", "Stable", "consumer"}, strings.Fields(list[1]))

		desc := lines(ok(t, addr, "", "groups", "describe", "billing"))
		require.Len(t, desc, 6, "summary, member header, one member, partition header, two partitions")
		assert.True(t, strings.HasPrefix(desc[0], "group billing  state Stable"), desc[0])
		assert.Contains(t, desc[0], "members 1")
		assert.Contains(t, desc[0], "lag 3")
		member := strings.Fields(desc[2])
		require.Len(t, member, 5, desc[2])
		assert.Equal(t, "reader", member[2], "client id")
		assert.Equal(t, "orders:0,1", member[4], "assignment")
		assert.Equal(t, []string{"TOPIC", "PARTITION", "MEMBER", "COMMITTED", "END", "LAG"}, strings.Fields(desc[3]))
		assert.Equal(t, []string{"orders", "0", member[0], "6", "6", "0"}, strings.Fields(desc[4]))
		assert.Equal(t, []string{"orders", "1", member[0], "4", "7", "3"}, strings.Fields(desc[5]))

		r := cli(t, addr, "", "groups", "delete", "billing")
		assert.Equal(t, 1, r.code, "a group with members cannot be deleted")
		assert.Contains(t, r.stderr, "NON_EMPTY_GROUP")

		cl.Close()
		assert.Equal(t, "deleted group billing\n", ok(t, addr, "", "groups", "delete", "billing"))
		assert.Equal(t, []string{"GROUP", "STATE", "TYPE"}, strings.Fields(ok(t, addr, "", "groups", "list")))
		r = cli(t, addr, "", "groups", "describe", "billing")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "does not exist")
	})
}
