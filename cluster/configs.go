package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Dynamic configs: AlterConfigs and IncrementalAlterConfigs decided by the
// controller, committed as ConfigChange records, applied by every broker
// from its image.
//
// Two kinds of resource take them:
//   - a topic: every config of ConfigDefaults, checked as CreateTopics
//     checks them (an unknown key or a bad value is INVALID_CONFIG with the
//     reason); min.insync.replicas may not exceed the replication factor.
//   - the cluster-wide broker defaults (broker resource ""):
//     min.insync.replicas and unclean.leader.election.enable, the defaults
//     of topics that do not set them, read by the controller's elections
//     and ISR rules and by every broker's leaders (Settings.Dynamic), and
//     the replication throttle rates (throttle.go). The static broker
//     configs (StaticBrokerConfigs) answer INVALID_REQUEST "Cannot update
//     these configs dynamically", as Kafka does.
//   - one broker (the resource named by its id): the replication throttle
//     rates only, which override the cluster-wide ones on that broker.
//     Any other config is refused there with INVALID_REQUEST: a per-broker
//     default of a topic config would make two leaders of one topic apply
//     different rules.

// Resource types of ConfigChange (kmsg.ConfigResourceType values).
const (
	ResourceTopic  = int8(kmsg.ConfigResourceTypeTopic)
	ResourceBroker = int8(kmsg.ConfigResourceTypeBroker)
)

// brokerConfigChecks are the broker configs that may be set cluster-wide.
var brokerConfigChecks = map[string]configCheck{
	ConfigMinInsyncReplicas:     configChecks[ConfigMinInsyncReplicas],
	ConfigUncleanLeaderElection: configChecks[ConfigUncleanLeaderElection],
	ConfigLeaderThrottledRate:   throttleRates[ConfigLeaderThrottledRate],
	ConfigFollowerThrottledRate: throttleRates[ConfigFollowerThrottledRate],
}

// StaticBrokerConfigs are the broker configs DescribeConfigs shows that
// only the broker's command line sets.
var StaticBrokerConfigs = []string{
	"auto.create.topics.enable", "broker.id", "broker.rack", "default.replication.factor",
	"log.dirs", "message.max.bytes", "num.partitions",
}

// listConfigs are the topic configs of type LIST: the only ones APPEND and
// SUBTRACT apply to.
var listConfigs = map[string]bool{
	ConfigCleanupPolicy:             true,
	ConfigLeaderThrottledReplicas:   true,
	ConfigFollowerThrottledReplicas: true,
}

// checkConfig checks one value of a config of resource type typ (nil:
// deleted, always fine for a known key).
func checkConfig(typ int8, key string, value *string) error {
	checks := configChecks
	switch typ {
	case ResourceTopic:
	case ResourceBroker:
		checks = brokerConfigChecks
	default:
		return fmt.Errorf("resource type %d has no configs: %w", typ, kerr.InvalidRequest)
	}
	check, ok := checks[key]
	if !ok {
		return fmt.Errorf("config %q is not supported (supported: %v): %w", key, slices.Sorted(maps.Keys(checks)), kerr.InvalidConfig)
	}
	if value == nil {
		return nil
	}
	if err := check(*value); err != nil {
		return fmt.Errorf("config %s: %v: %w", key, err, kerr.InvalidConfig)
	}
	return nil
}

// Dynamic is s with the cluster-wide dynamic broker configs of m over its
// static defaults: what every decision and every broker reads.
func (s Settings) Dynamic(m *Metadata) Settings {
	if v, ok := m.clusterConfigs[ConfigMinInsyncReplicas]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			s.MinInsyncReplicas = n
		}
	}
	if v, ok := m.clusterConfigs[ConfigUncleanLeaderElection]; ok {
		s.UncleanLeaderElection = v == "true"
	}
	return s
}

// MinISRIn is t's effective min.insync.replicas in image m: its own, else
// the cluster-wide dynamic default, else s's.
func (s Settings) MinISRIn(m *Metadata, t *Topic) int { return s.Dynamic(m).MinISR(t) }

// ConfigOp is one operation of an alteration: kmsg's SET, DELETE, APPEND
// or SUBTRACT of Value on the config Name.
type ConfigOp struct {
	Name  string
	Op    kmsg.IncrementalAlterConfigOp
	Value *string
}

// ConfigAlteration is what one resource of an AlterConfigs (Replace: the
// ops, all SETs, become the whole set of dynamic configs) or
// IncrementalAlterConfigs request asks.
type ConfigAlteration struct {
	Type    kmsg.ConfigResourceType
	Name    string
	Replace bool
	Ops     []ConfigOp
}

// AlterConfigs decides one resource's alteration on m: the records that
// take its dynamic configs where the request asks (none when they are
// there already). Errors wrap kerr values: UNKNOWN_TOPIC_OR_PARTITION,
// INVALID_CONFIG (unknown key, bad value), INVALID_REQUEST (null value,
// repeated key, unknown operation, APPEND or SUBTRACT of a config that is
// not a list, a read-only broker config, a resource type without configs).
func (s Settings) AlterConfigs(m *Metadata, a ConfigAlteration) ([]Record, error) {
	if err := checkOps(a); err != nil {
		return nil, err
	}
	switch a.Type {
	case kmsg.ConfigResourceTypeTopic:
		return s.alterTopicConfigs(m, a)
	case kmsg.ConfigResourceTypeBroker:
		return s.alterBrokerConfigs(m, a)
	}
	return nil, fmt.Errorf("resource type %v has no configs to alter here: %w", a.Type, kerr.InvalidRequest)
}

// checkOps refuses what no resource accepts.
func checkOps(a ConfigAlteration) error {
	seen := map[string]bool{}
	for _, op := range a.Ops {
		if seen[op.Name] {
			return fmt.Errorf("config %q named more than once: %w", op.Name, kerr.InvalidRequest)
		}
		seen[op.Name] = true
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if op.Value == nil {
				return fmt.Errorf("null value not supported for %s: %w", op.Name, kerr.InvalidRequest)
			}
		case kmsg.IncrementalAlterConfigOpDelete:
		default:
			return fmt.Errorf("config %q: unknown operation %d: %w", op.Name, op.Op, kerr.InvalidRequest)
		}
	}
	return nil
}

func (s Settings) alterTopicConfigs(m *Metadata, a ConfigAlteration) ([]Record, error) {
	t, ok := m.Topic(a.Name)
	if !ok {
		return nil, fmt.Errorf("topic %q: %w", a.Name, kerr.UnknownTopicOrPartition)
	}
	next, err := alteredConfigs(t.Configs, a, ConfigDefaults)
	if err != nil {
		return nil, fmt.Errorf("topic %q: %w", a.Name, err)
	}
	for _, k := range sortedKeys(next) {
		v := next[k]
		if err := checkConfig(ResourceTopic, k, &v); err != nil {
			return nil, fmt.Errorf("topic %q: %w", a.Name, err)
		}
	}
	nt := &Topic{Name: t.Name, Configs: next}
	if minISR, rf := s.Dynamic(m).MinISR(nt), len(t.Partitions[0].Replicas); minISR > rf {
		return nil, fmt.Errorf("topic %q: min.insync.replicas %d above the replication factor %d: %w",
			a.Name, minISR, rf, kerr.InvalidConfig)
	}
	return configRecords(ResourceTopic, t, a.Name, t.Configs, next), nil
}

func (s Settings) alterBrokerConfigs(m *Metadata, a ConfigAlteration) ([]Record, error) {
	var static []string
	for _, op := range a.Ops {
		if slices.Contains(StaticBrokerConfigs, op.Name) {
			static = append(static, op.Name)
		} else if err := checkConfig(ResourceBroker, op.Name, nil); err != nil {
			return nil, err
		}
	}
	if len(static) > 0 {
		return nil, fmt.Errorf("cannot update these configs dynamically: %v: %w", static, kerr.InvalidRequest)
	}
	id, ok := brokerResource(a.Name)
	if !ok {
		return nil, fmt.Errorf("broker resource %q is neither \"\" (cluster-wide) nor a broker id: %w", a.Name, kerr.InvalidRequest)
	}
	cur := m.clusterConfigs
	if id >= 0 {
		for _, op := range a.Ops {
			if _, ok := throttleRates[op.Name]; !ok {
				return nil, fmt.Errorf("broker %d: %s is set cluster-wide only (the broker resource named \"\"); per broker: %v: %w",
					id, op.Name, sortedKeys(throttleRates), kerr.InvalidRequest)
			}
		}
		cur = m.brokerConfigs[id]
	}
	defaults := DefaultConfigs(s)
	for k := range throttleRates {
		defaults[k] = strconv.FormatInt(Unthrottled, 10)
	}
	next, err := alteredConfigs(cur, a, defaults)
	if err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(next) {
		v := next[k]
		if err := checkConfig(ResourceBroker, k, &v); err != nil {
			return nil, err
		}
	}
	return configRecords(ResourceBroker, nil, a.Name, cur, next), nil
}

// alteredConfigs is cur after a's operations. A list config that is not
// set appends to and subtracts from its default, as Kafka does.
func alteredConfigs(cur map[string]string, a ConfigAlteration, defaults map[string]string) (map[string]string, error) {
	next := maps.Clone(cur)
	if a.Replace {
		next = map[string]string{}
	}
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range a.Ops {
		if (op.Op == kmsg.IncrementalAlterConfigOpAppend || op.Op == kmsg.IncrementalAlterConfigOpSubtract) && !listConfigs[op.Name] {
			if _, known := defaults[op.Name]; !known {
				return nil, checkConfig(int8(a.Type), op.Name, nil)
			}
			return nil, fmt.Errorf("config %s is not a list: %v is not allowed for it: %w", op.Name, op.Op, kerr.InvalidRequest)
		}
		v, set := next[op.Name]
		if !set {
			v = defaults[op.Name]
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend:
			list := splitList(v)
			for _, e := range splitList(*op.Value) {
				if !slices.Contains(list, e) {
					list = append(list, e)
				}
			}
			next[op.Name] = strings.Join(list, ",")
		case kmsg.IncrementalAlterConfigOpSubtract:
			drop := splitList(*op.Value)
			list := slices.DeleteFunc(splitList(v), func(e string) bool { return slices.Contains(drop, e) })
			next[op.Name] = strings.Join(list, ",")
		}
	}
	return next, nil
}

func splitList(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// configRecords are the records that take a resource's configs from cur to
// next, one per key that changes, by key.
func configRecords(typ int8, t *Topic, name string, cur, next map[string]string) []Record {
	var recs []Record
	keys := map[string]string{}
	maps.Copy(keys, cur)
	maps.Copy(keys, next)
	for _, k := range sortedKeys(keys) {
		old, had := cur[k]
		v, has := next[k]
		if had == has && old == v {
			continue
		}
		c := &ConfigChange{ResourceType: typ, ResourceName: name, Name: k}
		if t != nil {
			c.TopicID = t.ID
		}
		if has {
			c.Value = &v
		}
		recs = append(recs, Record{Config: c})
	}
	return recs
}
