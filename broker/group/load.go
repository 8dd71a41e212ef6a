package group

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Log is the __consumer_offsets partition as the coordinator uses it. The
// broker satisfies it with the partition layer; tests with grouptest.
type Log interface {
	// Append appends one RecordBatch v2 (its base offset is assigned by the
	// log) and returns the offset just past it, as soon as the batch is
	// ordered; it need not be durable yet.
	Append(batch []byte) (end int64, err error)
	// WaitDurable returns once every batch below end is durable: for the
	// broker, committed (below the high watermark, on every ISR member),
	// so that it survives the partition's leadership moving.
	WaitDurable(ctx context.Context, end int64) error
	// Read returns whole stored batches, concatenated, starting with the one
	// that holds offset, about maxBytes of them; nothing at the end.
	Read(offset int64, maxBytes int) ([]byte, error)
	// StartOffset is the first offset Read accepts.
	StartOffset() int64
	// DeleteBefore moves the log start to offset, durably (compaction).
	// offset is never past an end that WaitDurable returned for.
	DeleteBefore(ctx context.Context, offset int64) error
}

const replayReadBytes = 1 << 20

// loaded is what replay found for one group: the latest value per key.
type loaded struct {
	meta    *kmsg.GroupMetadataValue
	offsets map[TopicPartition]Offset
}

// replayed is what replay found in the log.
type replayed struct {
	groups map[string]*loaded
	// live is the latest value of every key whose latest record applied is
	// not a tombstone, under the key as the coordinator writes it: what a
	// compaction copies.
	live  map[string][]byte
	start int64 // the log's start and end offsets
	end   int64
	bytes int64 // batch bytes between them
}

// replay reads the whole log; for each key the latest record wins and a
// tombstone deletes.
func replay(log Log, logger *slog.Logger) (*replayed, error) {
	groups := map[string]*loaded{}
	live := map[string][]byte{}
	get := func(id string) *loaded {
		l := groups[id]
		if l == nil {
			l = &loaded{offsets: map[TopicPartition]Offset{}}
			groups[id] = l
		}
		return l
	}
	apply := func(off int64, r kmsg.Record) {
		key, err := applyRecord(get, off, r)
		switch {
		case err != nil:
			logger.Warn("__consumer_offsets: skipping record", "offset", off, "err", err)
		case r.Value == nil:
			delete(live, string(key))
		default:
			live[string(key)] = bytes.Clone(r.Value) // r.Value is in the read buffer
		}
	}
	skip := func(err error) { logger.Warn("__consumer_offsets: skipping batch", "err", err) }
	offset := log.StartOffset()
	out := &replayed{groups: groups, live: live, start: offset}
	for {
		data, err := log.Read(offset, replayReadBytes)
		if err != nil {
			return nil, fmt.Errorf("read __consumer_offsets at %d: %w", offset, err)
		}
		if len(data) == 0 {
			break
		}
		next, err := decodeBatches(data, apply, skip)
		if err != nil {
			return nil, fmt.Errorf("replay __consumer_offsets at %d: %w", offset, err)
		}
		if next <= offset {
			return nil, fmt.Errorf("replay __consumer_offsets: no progress at %d", offset)
		}
		offset = next
		out.bytes += int64(len(data))
	}
	out.end = offset
	for id, l := range groups {
		if l.meta == nil && len(l.offsets) == 0 {
			delete(groups, id)
		}
	}
	return out, nil
}

// applyRecord applies one record to what replay found and returns its key
// as the coordinator writes it (keys of version 0 and 1 name the same
// offset).
func applyRecord(get func(string) *loaded, off int64, r kmsg.Record) ([]byte, error) {
	if len(r.Key) < 2 {
		return nil, fmt.Errorf("key of %d bytes", len(r.Key))
	}
	switch v := int16(binary.BigEndian.Uint16(r.Key)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			return nil, fmt.Errorf("offset key: %w", err)
		}
		l := get(k.Group)
		tp := TopicPartition{Topic: k.Topic, Partition: k.Partition}
		if r.Value == nil {
			delete(l.offsets, tp)
			return offsetKey(k.Group, tp), nil
		}
		var val kmsg.OffsetCommitValue
		if err := val.ReadFrom(r.Value); err != nil {
			return nil, fmt.Errorf("offset value for %s: %w", k.Group, err)
		}
		epoch := int32(-1)
		if val.Version >= 3 {
			epoch = val.LeaderEpoch
		}
		l.offsets[tp] = Offset{
			Offset:      val.Offset,
			LeaderEpoch: epoch,
			Metadata:    val.Metadata,
			CommitTime:  time.UnixMilli(val.CommitTimestamp),
			pos:         off,
		}
		return offsetKey(k.Group, tp), nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			return nil, fmt.Errorf("group key: %w", err)
		}
		l := get(k.Group)
		if r.Value == nil {
			l.meta = nil
			return metadataKey(k.Group), nil
		}
		var val kmsg.GroupMetadataValue
		if err := val.ReadFrom(r.Value); err != nil {
			return nil, fmt.Errorf("group value for %s: %w", k.Group, err)
		}
		l.meta = &val
		return metadataKey(k.Group), nil
	default:
		return nil, fmt.Errorf("key version %d is not written by this coordinator", v)
	}
}

// restoreGroup rebuilds a group from what replay found. Members come back
// as of the last stored generation, Stable, their sessions starting now:
// they go on heartbeating as if the broker had never gone, and those that
// do not come back expire.
func restoreGroup(id string, l *loaded, set Settings, now time.Time) *Group {
	g := NewGroup(id, set, now)
	for tp, o := range l.offsets {
		g.offsets[tp] = o
	}
	if l.meta == nil {
		return g
	}
	g.persisted = true
	g.protocolType = l.meta.ProtocolType
	g.generation = l.meta.Generation
	if l.meta.Protocol != nil {
		g.protocol = *l.meta.Protocol
	}
	for _, mv := range l.meta.Members {
		m := &member{
			id:               mv.MemberID,
			clientID:         mv.ClientID,
			clientHost:       mv.ClientHost,
			sessionTimeout:   time.Duration(mv.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(mv.RebalanceTimeoutMillis) * time.Millisecond,
			protocols:        []Protocol{{Name: g.protocol, Metadata: bytes.Clone(mv.Subscription)}},
			assignment:       bytes.Clone(mv.Assignment),
			lastHeartbeat:    now,
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		if mv.InstanceID != nil {
			m.instanceID = *mv.InstanceID
			g.static[m.instanceID] = m
		}
		g.members = append(g.members, m)
		g.byID[m.id] = m
	}
	if len(g.members) == 0 && l.meta.CurrentStateTimestamp > 0 {
		// Empty since then: offset retention counts from that moment.
		g.stateSince = time.UnixMilli(l.meta.CurrentStateTimestamp)
	}
	if len(g.members) > 0 {
		g.setState(Stable, now)
		g.leader = g.members[0].id
		if l.meta.Leader != nil && g.byID[*l.meta.Leader] != nil {
			g.leader = *l.meta.Leader
		}
	}
	return g
}
