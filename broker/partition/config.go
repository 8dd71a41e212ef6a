package partition

import (
	"fmt"
	"strconv"

	"github.com/minikafka/minikafka/cluster"
)

// topicConfig is the typed view of a topic's effective configs that the
// partitions use. The controller validated them (cluster.ValidateConfigs).
type topicConfig struct {
	maxMessageBytes int
	segmentBytes    int64 // 0: the engine options' value
	retentionMs     int64 // -1: keep forever
	retentionBytes  int64 // -1: no size limit
}

func parseTopicConfig(set map[string]string) topicConfig {
	get := func(k string) int64 {
		v, ok := set[k]
		if !ok {
			v = cluster.ConfigDefaults[k]
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			// Values were validated before they were stored.
			panic(fmt.Sprintf("partition: stored config %s=%q is not an integer", k, v))
		}
		return n
	}
	c := topicConfig{
		maxMessageBytes: int(get(cluster.ConfigMaxMessageBytes)),
		retentionMs:     get(cluster.ConfigRetentionMs),
		retentionBytes:  get(cluster.ConfigRetentionBytes),
	}
	if _, ok := set[cluster.ConfigSegmentBytes]; ok {
		c.segmentBytes = get(cluster.ConfigSegmentBytes)
	}
	return c
}
