package broker

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// DescribeConfigs: v0-4
//
// Behaviour:
//   - Topic resources: every topic config the broker knows (the keys of
//     cluster.ConfigDefaults), a value set on the topic with source
//     DYNAMIC_TOPIC_CONFIG, else the cluster-wide dynamic default
//     (DYNAMIC_DEFAULT_BROKER_CONFIG) where one is set, else its default
//     with source DEFAULT_CONFIG.
//     ConfigNames null means all; a named key we do not know is left out,
//     as Kafka does. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
//   - Broker resources (name "" or our node id): a few read-only static
//     settings (broker.id, broker.rack, num.partitions,
//     default.replication.factor, auto.create.topics.enable,
//     message.max.bytes, log.dirs), and min.insync.replicas and
//     unclean.leader.election.enable, which AlterConfigs may set
//     cluster-wide: DYNAMIC_DEFAULT_BROKER_CONFIG once set, the static
//     value before; the replication throttle rates, which may be set per
//     broker too: DYNAMIC_BROKER_CONFIG when this broker has its own,
//     DYNAMIC_DEFAULT_BROKER_CONFIG when the cluster has one, else
//     DEFAULT_CONFIG (unthrottled, Long.MAX_VALUE as in Kafka). Another
//     broker id (clients ask each broker for its own): INVALID_REQUEST.
//   - Any other resource type: INVALID_REQUEST.
//   - No synonyms (IncludeSynonyms gets an empty list); documentation null.
//
// Version notes:
//   - v1: Source, synonyms; v3: ConfigType, documentation; v4: flexible.

func init() { register(32, 0, 4, handleDescribeConfigs) }

// topicConfigTypes are the types of the topic configs the broker accepts
// (cluster.ConfigDefaults holds their names and defaults).
var topicConfigTypes = map[string]kmsg.ConfigType{
	cluster.ConfigCleanupPolicy:             kmsg.ConfigTypeList,
	cluster.ConfigRetentionMs:               kmsg.ConfigTypeLong,
	cluster.ConfigRetentionBytes:            kmsg.ConfigTypeLong,
	cluster.ConfigSegmentBytes:              kmsg.ConfigTypeInt,
	cluster.ConfigMaxMessageBytes:           kmsg.ConfigTypeInt,
	cluster.ConfigMessageTimestampType:      kmsg.ConfigTypeString,
	cluster.ConfigMinInsyncReplicas:         kmsg.ConfigTypeInt,
	cluster.ConfigUncleanLeaderElection:     kmsg.ConfigTypeBoolean,
	cluster.ConfigLeaderThrottledReplicas:   kmsg.ConfigTypeList,
	cluster.ConfigFollowerThrottledReplicas: kmsg.ConfigTypeList,
}

// configEntry is one described config.
type configEntry struct {
	name     string
	value    *string
	source   kmsg.ConfigSource
	typ      kmsg.ConfigType
	readOnly bool
}

// topicConfigEntries lists a topic's effective configs in image img, sorted
// by name: set ones as dynamic topic configs, the rest as defaults, the
// cluster-wide dynamic ones or the static.
func topicConfigEntries(img *cluster.Metadata, t *cluster.Topic, set cluster.Settings) []configEntry {
	var out []configEntry
	for _, c := range cluster.ConfigEntries(t, set.Dynamic(img)) {
		v := c.Value
		e := configEntry{name: c.Name, value: &v, source: kmsg.ConfigSourceDynamicTopicConfig, typ: topicConfigTypes[c.Name]}
		if _, clusterWide := img.ClusterConfigs()[c.Name]; c.Default && clusterWide {
			e.source = kmsg.ConfigSourceDynamicDefaultBrokerConfig
		} else if c.Default {
			e.source = kmsg.ConfigSourceDefaultConfig
		}
		if e.typ == kmsg.ConfigTypeUnknown {
			e.typ = kmsg.ConfigTypeString
		}
		out = append(out, e)
	}
	return out
}

func (s *Server) brokerConfigEntries(img *cluster.Metadata) []configEntry {
	str := func(v string) *string { return &v }
	static := kmsg.ConfigSourceStaticBrokerConfig
	set := s.ctl.Settings().Dynamic(img)
	// dynamic is a config that the cluster-wide broker resource may set:
	// static until it is set there.
	dynamic := func(name, value string, typ kmsg.ConfigType) configEntry {
		e := configEntry{name, str(value), static, typ, false}
		if _, ok := img.ClusterConfigs()[name]; ok {
			e.source = kmsg.ConfigSourceDynamicDefaultBrokerConfig
		}
		return e
	}
	// throttle is a replication throttle rate: per broker or cluster-wide.
	throttle := func(name string) configEntry {
		e := configEntry{name, str(strconv.FormatInt(img.ReplicationThrottle(s.cfg.NodeID, name), 10)), kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, false}
		if _, ok := img.BrokerConfigs(s.cfg.NodeID)[name]; ok {
			e.source = kmsg.ConfigSourceDynamicBrokerConfig
		} else if _, ok := img.ClusterConfigs()[name]; ok {
			e.source = kmsg.ConfigSourceDynamicDefaultBrokerConfig
		}
		return e
	}
	return []configEntry{
		{"auto.create.topics.enable", str(strconv.FormatBool(s.cfg.AutoCreate)), static, kmsg.ConfigTypeBoolean, true},
		{"broker.id", str(strconv.Itoa(int(s.cfg.NodeID))), static, kmsg.ConfigTypeInt, true},
		{"broker.rack", str(s.cfg.Rack), static, kmsg.ConfigTypeString, true},
		{"default.replication.factor", str(strconv.Itoa(int(set.DefaultReplicationFactor))), static, kmsg.ConfigTypeInt, true},
		throttle(cluster.ConfigFollowerThrottledRate),
		throttle(cluster.ConfigLeaderThrottledRate),
		{"log.dirs", str(s.cfg.Dir), static, kmsg.ConfigTypeString, true},
		{"message.max.bytes", str(cluster.ConfigDefaults[cluster.ConfigMaxMessageBytes]), static, kmsg.ConfigTypeInt, true},
		dynamic(cluster.ConfigMinInsyncReplicas, strconv.Itoa(set.MinInsyncReplicas), kmsg.ConfigTypeInt),
		{"num.partitions", str(strconv.Itoa(int(s.cfg.DefaultPartitions))), static, kmsg.ConfigTypeInt, true},
		dynamic(cluster.ConfigUncleanLeaderElection, strconv.FormatBool(set.UncleanLeaderElection), kmsg.ConfigTypeBoolean),
	}
}

func handleDescribeConfigs(r *request) reply {
	req := r.body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		entries, err := r.s.describeResource(rr)
		if err != nil {
			sr.ErrorCode = errorCode(nil, err)
			sr.ErrorMessage = errorMessage(err)
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.name) {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.ReadOnly, c.Source, c.ConfigType = e.name, e.value, e.readOnly, e.source, e.typ
			c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
			sr.Configs = append(sr.Configs, c)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return done(resp)
}

func (s *Server) describeResource(rr kmsg.DescribeConfigsRequestResource) ([]configEntry, error) {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		img := s.store.Image()
		t, ok := img.Topic(rr.ResourceName)
		if !ok {
			return nil, fmt.Errorf("%w: %q", kerr.UnknownTopicOrPartition, rr.ResourceName)
		}
		return topicConfigEntries(img, t, s.ctl.Settings()), nil
	case kmsg.ConfigResourceTypeBroker:
		if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(s.cfg.NodeID)) {
			return nil, fmt.Errorf("%w: no broker %q here", kerr.InvalidRequest, rr.ResourceName)
		}
		return s.brokerConfigEntries(s.store.Image()), nil
	}
	return nil, fmt.Errorf("%w: resource type %d is not supported", kerr.InvalidRequest, rr.ResourceType)
}
