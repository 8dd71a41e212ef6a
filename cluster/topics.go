package cluster

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Topic names and configs: the controller checks them when a topic is
// created; the partitions read the effective values.

// MaxTopicNameLength is Kafka's limit.
const MaxTopicNameLength = 249

// OffsetsTopic is where consumer groups keep their offsets.
const OffsetsTopic = "__consumer_offsets"

// TransactionStateTopic is where transaction coordinators keep the state
// of transactional ids.
const TransactionStateTopic = "__transaction_state"

// Internal reports whether name is one of Kafka's internal topics, which
// clients may not produce to and retention never trims.
func Internal(name string) bool {
	return name == OffsetsTopic || name == TransactionStateTopic
}

// ValidTopicName applies Kafka's rules: 1-249 characters of [a-zA-Z0-9._-],
// not "." or "..". The error wraps kerr.InvalidTopicException.
func ValidTopicName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > MaxTopicNameLength {
		return fmt.Errorf("topic name %q is empty, '.', '..' or longer than %d: %w", name, MaxTopicNameLength, kerr.InvalidTopicException)
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("topic name %q has %q; legal are [a-zA-Z0-9._-]: %w", name, c, kerr.InvalidTopicException)
		}
	}
	return nil
}

// confusable is name with '.' read as '_': Kafka refuses two topics that
// differ only there, since metric names would not tell them apart.
func confusable(name string) string { return strings.ReplaceAll(name, ".", "_") }

// Topic config names this broker accepts. Any other key is refused with
// kerr.InvalidConfig, so a client never believes a setting took effect when
// it did not.
const (
	ConfigCleanupPolicy         = "cleanup.policy"
	ConfigRetentionMs           = "retention.ms"
	ConfigRetentionBytes        = "retention.bytes"
	ConfigSegmentBytes          = "segment.bytes"
	ConfigMaxMessageBytes       = "max.message.bytes"
	ConfigMessageTimestampType  = "message.timestamp.type"
	ConfigMinInsyncReplicas     = "min.insync.replicas"
	ConfigUncleanLeaderElection = "unclean.leader.election.enable"
)

// ConfigDefaults are the accepted topic configs with Kafka's defaults. A
// topic's Configs hold only what was set explicitly; everything else has
// these values (min.insync.replicas and unclean.leader.election.enable fall
// back to the broker's settings first: see Settings).
var ConfigDefaults = map[string]string{
	ConfigCleanupPolicy:             "delete",
	ConfigRetentionMs:               "604800000",
	ConfigRetentionBytes:            "-1",
	ConfigSegmentBytes:              "1073741824",
	ConfigMaxMessageBytes:           "1048588",
	ConfigMessageTimestampType:      "CreateTime",
	ConfigMinInsyncReplicas:         "1",
	ConfigUncleanLeaderElection:     "false",
	ConfigLeaderThrottledReplicas:   "",
	ConfigFollowerThrottledReplicas: "",
}

type configCheck func(v string) error

var configChecks = map[string]configCheck{
	// compact needs a cleaner this broker does not have; LogAppendTime would
	// need the broker to rewrite timestamps inside the CRC.
	ConfigCleanupPolicy:             oneOf("delete"),
	ConfigRetentionMs:               intRange(-1, math.MaxInt64),
	ConfigRetentionBytes:            intRange(-1, math.MaxInt64),
	ConfigSegmentBytes:              intRange(14, math.MaxInt32), // Kafka's minimum
	ConfigMaxMessageBytes:           intRange(0, math.MaxInt32),
	ConfigMessageTimestampType:      oneOf("CreateTime"),
	ConfigMinInsyncReplicas:         intRange(1, math.MaxInt16),
	ConfigUncleanLeaderElection:     oneOf("true", "false"),
	ConfigLeaderThrottledReplicas:   throttledReplicas,
	ConfigFollowerThrottledReplicas: throttledReplicas,
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

// ValidateConfigs checks a CreateTopics config map and returns the explicit
// settings. A nil value means "use the default" and is dropped. Errors wrap
// kerr.InvalidConfig.
func ValidateConfigs(in map[string]*string) (map[string]string, error) {
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

// DefaultConfigs is ConfigDefaults with the values the controller's
// settings give to the configs that have a broker-wide default.
func DefaultConfigs(s Settings) map[string]string {
	s = s.WithDefaults()
	out := maps.Clone(ConfigDefaults)
	out[ConfigMinInsyncReplicas] = strconv.Itoa(s.MinInsyncReplicas)
	out[ConfigUncleanLeaderElection] = strconv.FormatBool(s.UncleanLeaderElection)
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
