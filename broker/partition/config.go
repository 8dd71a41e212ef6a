package partition

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Topic config names this broker accepts. Any other key is refused with
// kerr.InvalidConfig, so a client never believes a setting took effect
// when it did not.
const (
	ConfigCleanupPolicy        = "cleanup.policy"
	ConfigRetentionMs          = "retention.ms"
	ConfigRetentionBytes       = "retention.bytes"
	ConfigSegmentBytes         = "segment.bytes"
	ConfigMaxMessageBytes      = "max.message.bytes"
	ConfigMessageTimestampType = "message.timestamp.type"
	ConfigMinInsyncReplicas    = "min.insync.replicas"
)

// ConfigDefaults are the accepted topic configs with Kafka's defaults.
// TopicInfo.Configs holds only what was set explicitly; everything else has
// these values.
var ConfigDefaults = map[string]string{
	ConfigCleanupPolicy:        "delete",
	ConfigRetentionMs:          "604800000",
	ConfigRetentionBytes:       "-1",
	ConfigSegmentBytes:         "1073741824",
	ConfigMaxMessageBytes:      "1048588",
	ConfigMessageTimestampType: "CreateTime",
	ConfigMinInsyncReplicas:    "1",
}

// configCheck validates one config value.
type configCheck func(v string) error

var configChecks = map[string]configCheck{
	// compact needs a cleaner this broker does not have; LogAppendTime would
	// need the broker to rewrite timestamps inside the CRC.
	ConfigCleanupPolicy:        oneOf("delete"),
	ConfigRetentionMs:          intRange(-1, math.MaxInt64),
	ConfigRetentionBytes:       intRange(-1, math.MaxInt64),
	ConfigSegmentBytes:         intRange(14, math.MaxInt32), // Kafka's minimum
	ConfigMaxMessageBytes:      intRange(0, math.MaxInt32),
	ConfigMessageTimestampType: oneOf("CreateTime"),
	ConfigMinInsyncReplicas:    intRange(1, math.MaxInt32),
}

func oneOf(allowed ...string) configCheck {
	return func(v string) error {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("%q is not supported (supported: %v)", v, allowed)
		}
		return nil
	}
}

func intRange(lo, hi int64) configCheck {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < lo || n > hi {
			return fmt.Errorf("%d is outside [%d, %d]", n, lo, hi)
		}
		return nil
	}
}

// validateConfigs checks a CreateTopics config map and returns the explicit
// settings. A nil value means "use the default" and is dropped.
func validateConfigs(in map[string]*string) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(in)) {
		v := in[k]
		check, ok := configChecks[k]
		if !ok {
			return nil, fmt.Errorf("config %q is not supported (supported: %v): %w",
				k, slices.Sorted(maps.Keys(configChecks)), kerr.InvalidConfig)
		}
		if v == nil {
			continue
		}
		if err := check(*v); err != nil {
			return nil, fmt.Errorf("config %s: %v: %w", k, err, kerr.InvalidConfig)
		}
		out[k] = *v
	}
	return out, nil
}

// topicConfig is the typed view of a topic's effective configs that the
// partitions use.
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
			v = ConfigDefaults[k]
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			// Values were validated before they were stored.
			panic(fmt.Sprintf("partition: stored config %s=%q is not an integer", k, v))
		}
		return n
	}
	c := topicConfig{
		maxMessageBytes: int(get(ConfigMaxMessageBytes)),
		retentionMs:     get(ConfigRetentionMs),
		retentionBytes:  get(ConfigRetentionBytes),
	}
	if _, ok := set[ConfigSegmentBytes]; ok {
		c.segmentBytes = get(ConfigSegmentBytes)
	}
	return c
}

// AllConfigs returns every accepted config of the topic with its effective
// value, and whether that value is the default.
func (t TopicInfo) AllConfigs() []ConfigEntry {
	out := make([]ConfigEntry, 0, len(ConfigDefaults))
	for _, k := range slices.Sorted(maps.Keys(ConfigDefaults)) {
		v, set := t.Configs[k]
		if !set {
			v = ConfigDefaults[k]
		}
		out = append(out, ConfigEntry{Name: k, Value: v, Default: !set})
	}
	return out
}

// ConfigEntry is one effective topic config.
type ConfigEntry struct {
	Name    string
	Value   string
	Default bool
}
