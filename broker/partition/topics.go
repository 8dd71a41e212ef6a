package partition

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/engine"
)

// infosWith returns the current topic set with t replaced or added (or
// removed when t.Partitions == 0), sorted by name.
func (m *Manager) infosWith(t TopicInfo) []TopicInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []TopicInfo
	for name, tp := range m.topics {
		if name != t.Name {
			out = append(out, tp.info)
		}
	}
	if t.Partitions > 0 {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// validTopicName applies Kafka's rules: 1-249 characters of [a-zA-Z0-9._-],
// not "." or "..".
func validTopicName(name string) error {
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

// collision returns an existing topic whose name equals name once '.' is
// read as '_'.
func (m *Manager) collision(name string) (string, bool) {
	norm := strings.ReplaceAll(name, ".", "_")
	m.mu.RLock()
	defer m.mu.RUnlock()
	for other := range m.topics {
		if other != name && strings.ReplaceAll(other, ".", "_") == norm {
			return other, true
		}
	}
	return "", false
}

// CreateTopic creates a topic with partitions partitions (-1: the default)
// and the given configs (nil values mean the default). Errors wrap
// kerr.TopicAlreadyExists, kerr.InvalidTopicException,
// kerr.InvalidPartitions or kerr.InvalidConfig.
func (m *Manager) CreateTopic(name string, partitions int32, configs map[string]*string) (TopicInfo, error) {
	if err := validTopicName(name); err != nil {
		return TopicInfo{}, err
	}
	if partitions == -1 {
		partitions = m.cfg.DefaultPartitions
	}
	if partitions < 1 || partitions > m.cfg.MaxPartitions {
		return TopicInfo{}, fmt.Errorf("topic %q: %d partitions, want 1 to %d: %w", name, partitions, m.cfg.MaxPartitions, kerr.InvalidPartitions)
	}
	set, err := validateConfigs(configs)
	if err != nil {
		return TopicInfo{}, fmt.Errorf("topic %q: %w", name, err)
	}
	m.admin.Lock()
	defer m.admin.Unlock()
	if err := m.checkOpen(); err != nil {
		return TopicInfo{}, err
	}
	if _, ok := m.Topic(name); ok {
		return TopicInfo{}, fmt.Errorf("topic %q: %w", name, kerr.TopicAlreadyExists)
	}
	if other, ok := m.collision(name); ok {
		// Kafka's rule: metric names replace '.' with '_', so the two
		// topics would be indistinguishable there.
		return TopicInfo{}, fmt.Errorf("topic %q collides with existing topic %q ('.' and '_' are confusable): %w",
			name, other, kerr.InvalidTopicException)
	}
	id, err := uuid.NewRandomFromReader(m.cfg.Rand)
	if err != nil {
		return TopicInfo{}, fmt.Errorf("topic %q: id: %w", name, err)
	}
	info := TopicInfo{Name: name, ID: id, Partitions: partitions, Configs: set, Internal: internalTopics[name]}
	t := &topic{info: info, cfg: parseTopicConfig(set)}
	if t.parts, err = m.openNew(t, 0, partitions); err != nil {
		return TopicInfo{}, err
	}
	// Metadata last: a crash before it leaves orphan directories, removed on
	// the next open, never a listed topic without its partitions.
	if err := m.writeMeta(m.infosWith(info)); err != nil {
		m.discard(t.parts)
		return TopicInfo{}, err
	}
	m.mu.Lock()
	m.topics[name] = t
	m.mu.Unlock()
	return cloneInfo(info), nil
}

// openNew opens partitions [from, to) of t on fresh directories: anything
// left there is an orphan (the metadata does not list it) and goes first.
func (m *Manager) openNew(t *topic, from, to int32) ([]*Partition, error) {
	var parts []*Partition
	for i := from; i < to; i++ {
		dir := partitionDir(m.fs, m.cfg.Dir, t.info.Name, i)
		if err := m.fs.RemoveAll(dir); err != nil {
			m.discard(parts)
			return nil, fmt.Errorf("partition %s-%d: clear %s: %w", t.info.Name, i, dir, err)
		}
		p, err := openPartition(m, t.info.Name, i, t.cfg)
		if err != nil {
			m.discard(parts)
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// discard closes partitions that were never published and removes their
// directories.
func (m *Manager) discard(parts []*Partition) {
	for _, p := range parts {
		if err := p.close(); err != nil {
			m.cfg.Logger.Warn("closing a discarded partition", "err", err)
		}
		m.removeDir(p.dir)
	}
}

// removeDir renames dir aside (so its name is free at once) and removes it.
// Failures are logged: the directory is an orphan the next open removes.
func (m *Manager) removeDir(dir string) {
	aside := dir + deletingSuffix
	if err := m.fs.Rename(dir, aside); err != nil {
		aside = dir
	}
	if err := m.fs.RemoveAll(aside); err != nil {
		m.cfg.Logger.Warn("removing a partition directory failed; the next open retries", "dir", aside, "err", err)
	}
}

// DeleteTopic deletes a topic and its data. Unknown names return
// kerr.UnknownTopicOrPartition. Operations in flight on its partitions fail
// with kerr.NotLeaderForPartition.
func (m *Manager) DeleteTopic(name string) error {
	m.admin.Lock()
	defer m.admin.Unlock()
	if err := m.checkOpen(); err != nil {
		return err
	}
	m.mu.RLock()
	t, ok := m.topics[name]
	m.mu.RUnlock()
	if !ok {
		return fmt.Errorf("topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	// Metadata first: once it is durable the topic is gone, whatever
	// happens to the directories.
	if err := m.writeMeta(m.infosWith(TopicInfo{Name: name})); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.topics, name)
	m.mu.Unlock()
	for _, p := range t.parts {
		if err := p.close(); err != nil {
			m.cfg.Logger.Warn("closing a deleted partition", "topic", name, "err", err)
		}
		m.removeDir(p.dir)
	}
	if err := engine.SyncDir(m.fs, m.fs.PathJoin(m.cfg.Dir, topicsDirName)); err != nil {
		m.cfg.Logger.Warn("syncing the topics directory", "err", err)
	}
	return nil
}

// CreatePartitions grows a topic to total partitions. Errors wrap
// kerr.UnknownTopicOrPartition, or kerr.InvalidPartitions when total is not
// larger than the current count or above the maximum.
func (m *Manager) CreatePartitions(name string, total int32) error {
	m.admin.Lock()
	defer m.admin.Unlock()
	if err := m.checkOpen(); err != nil {
		return err
	}
	m.mu.RLock()
	t, ok := m.topics[name]
	m.mu.RUnlock()
	if !ok {
		return fmt.Errorf("topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	cur := t.info.Partitions
	if total <= cur || total > m.cfg.MaxPartitions {
		return fmt.Errorf("topic %q has %d partitions, asked for %d (max %d): %w", name, cur, total, m.cfg.MaxPartitions, kerr.InvalidPartitions)
	}
	parts, err := m.openNew(t, cur, total)
	if err != nil {
		return err
	}
	info := t.info
	info.Partitions = total
	if err := m.writeMeta(m.infosWith(info)); err != nil {
		m.discard(parts)
		return err
	}
	m.mu.Lock()
	nt := &topic{info: info, cfg: t.cfg, parts: append(slices.Clip(t.parts), parts...)}
	m.topics[name] = nt
	m.mu.Unlock()
	return nil
}
