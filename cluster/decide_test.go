package cluster

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func str(s string) *string { return &s }

func TestCreateTopicValidation(t *testing.T) {
	m := threeBrokers(t)
	s := Settings{}.WithDefaults()
	rnd := rand.New(rand.NewPCG(2, 2))
	cases := []struct {
		name    string
		topic   string
		parts   int32
		configs map[string]*string
		want    *kerr.Error
	}{
		{"legal characters", "a.B_c-9", 1, nil, nil},
		{"249 characters", strings.Repeat("x", 249), 1, nil, nil},
		{"250 characters", strings.Repeat("x", 250), 1, nil, kerr.InvalidTopicException},
		{"empty", "", 1, nil, kerr.InvalidTopicException},
		{"dot", ".", 1, nil, kerr.InvalidTopicException},
		{"dot dot", "..", 1, nil, kerr.InvalidTopicException},
		{"slash", "a/b", 1, nil, kerr.InvalidTopicException},
		{"space", "a b", 1, nil, kerr.InvalidTopicException},
		{"non-ascii", "tópico", 1, nil, kerr.InvalidTopicException},
		{"already exists", "t", 1, nil, kerr.TopicAlreadyExists},
		{"zero partitions", "z", 0, nil, kerr.InvalidPartitions},
		{"negative partitions", "z", -2, nil, kerr.InvalidPartitions},
		{"two billion partitions", "z", 2_000_000_000, nil, kerr.InvalidPartitions},
		{"default partitions", "d", -1, nil, nil},
		{"unknown config", "c1", 1, map[string]*string{"compression.type": str("zstd")}, kerr.InvalidConfig},
		{"compact", "c2", 1, map[string]*string{ConfigCleanupPolicy: str("compact")}, kerr.InvalidConfig},
		{"LogAppendTime", "c3", 1, map[string]*string{ConfigMessageTimestampType: str("LogAppendTime")}, kerr.InvalidConfig},
		{"retention not a number", "c4", 1, map[string]*string{ConfigRetentionMs: str("week")}, kerr.InvalidConfig},
		{"retention below -1", "c5", 1, map[string]*string{ConfigRetentionBytes: str("-2")}, kerr.InvalidConfig},
		{"min.insync.replicas 0", "c6", 1, map[string]*string{ConfigMinInsyncReplicas: str("0")}, kerr.InvalidConfig},
		{"segment.bytes too small", "c7", 1, map[string]*string{ConfigSegmentBytes: str("13")}, kerr.InvalidConfig},
		{"unclean election not a boolean", "c8", 1, map[string]*string{ConfigUncleanLeaderElection: str("yes")}, kerr.InvalidConfig},
		{"every accepted config", "c9", 2, map[string]*string{
			ConfigCleanupPolicy: str("delete"), ConfigRetentionMs: str("-1"),
			ConfigRetentionBytes: str("1048576"), ConfigSegmentBytes: str("1048576"),
			ConfigMaxMessageBytes: str("2000000"), ConfigMessageTimestampType: str("CreateTime"),
			ConfigMinInsyncReplicas: str("1"), ConfigUncleanLeaderElection: str("true"),
		}, nil},
		{"nil value means default", "c10", 1, map[string]*string{ConfigRetentionMs: nil}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, err := s.CreateTopic(m, NewTopic{Name: c.topic, Partitions: c.parts, ReplicationFactor: 1, Configs: c.configs}, rnd)
			if c.want != nil {
				require.ErrorIs(t, err, c.want, "error %v", err)
				return
			}
			require.NoError(t, err)
			ct := rec.CreateTopic
			require.Equal(t, c.topic, ct.Name)
			if c.parts == -1 {
				require.Len(t, ct.Partitions, int(s.DefaultPartitions))
			}
			for k, v := range c.configs {
				if v != nil {
					require.Equal(t, *v, ct.Configs[k])
				} else {
					require.NotContains(t, ct.Configs, k)
				}
			}
			_, err = m.Apply(m.Offset()+1, []Record{rec})
			require.NoError(t, err, "what CreateTopic decides, Apply accepts")
		})
	}
}

func TestConfigEntries(t *testing.T) {
	tp := &Topic{Configs: map[string]string{ConfigRetentionMs: "5"}}
	all := ConfigEntries(tp, Settings{MinInsyncReplicas: 2})
	require.Len(t, all, len(ConfigDefaults))
	for _, e := range all {
		switch e.Name {
		case ConfigRetentionMs:
			require.Equal(t, ConfigEntry{Name: e.Name, Value: "5"}, e)
		case ConfigMinInsyncReplicas:
			require.Equal(t, ConfigEntry{Name: e.Name, Value: "2", Default: true}, e, "the broker-wide default")
		default:
			require.Equal(t, ConfigDefaults[e.Name], e.Value)
			require.True(t, e.Default)
		}
	}
}
