package group

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/coordlog"
)

// Log is the __consumer_offsets partition as the coordinator uses it
// (coordlog.Log). The broker satisfies it with the partition layer; tests
// with grouptest.
type Log = coordlog.Log

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
	// txns are the records of transactions with no marker yet, by producer
	// id, and txnFirst the offset of each one's first batch.
	txns     map[int64][]txnRecord
	txnFirst map[int64]int64
}

// txnRecord is a record of an undecided transaction, and its offset.
type txnRecord struct {
	off int64
	r   kmsg.Record
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
	out := &replayed{groups: groups, live: live, start: offset, txns: map[int64][]txnRecord{}, txnFirst: map[int64]int64{}}
	// A transaction's records wait for its marker: a commit applies them
	// at the marker's offset, an abort drops them.
	decode := func(data []byte) (int64, error) {
		next := int64(-1)
		bs, err := batch.SplitWhole(data)
		if err != nil || len(bs) == 0 {
			return next, fmt.Errorf("split batches: %v", err)
		}
		{
			for _, b := range bs {
				h, err := batch.ParseHeader(b)
				if err != nil {
					return next, err
				}
				next = h.LastOffset() + 1
				switch {
				case h.Attributes.Control():
					m, err := batch.ParseMarker(b)
					if err != nil {
						skip(fmt.Errorf("marker at %d: %w", h.BaseOffset, err))
						continue
					}
					recs := out.txns[h.ProducerID]
					delete(out.txns, h.ProducerID)
					delete(out.txnFirst, h.ProducerID)
					if m.Commit {
						for _, tr := range recs {
							apply(h.BaseOffset, tr.r)
						}
					}
				case h.Attributes.Transactional():
					if _, ok := out.txnFirst[h.ProducerID]; !ok {
						out.txnFirst[h.ProducerID] = h.BaseOffset
					}
					if _, err := decodeBatches(b, func(off int64, r kmsg.Record) {
						r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
						out.txns[h.ProducerID] = append(out.txns[h.ProducerID], txnRecord{off, r})
					}, skip); err != nil {
						return next, err
					}
				default:
					if _, err := decodeBatches(b, apply, skip); err != nil {
						return next, err
					}
				}
			}
		}
		return next, nil
	}
	for {
		data, err := log.Read(offset, replayReadBytes)
		if err != nil {
			return nil, fmt.Errorf("read __consumer_offsets at %d: %w", offset, err)
		}
		if len(data) == 0 {
			break
		}
		next, err := decode(data)
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

// pendingCommits are the offsets of undecided transaction records recs, by
// group.
func pendingCommits(recs []txnRecord) map[string][]Commit {
	scratch := map[string]*loaded{}
	get := func(id string) *loaded {
		l := scratch[id]
		if l == nil {
			l = &loaded{offsets: map[TopicPartition]Offset{}}
			scratch[id] = l
		}
		return l
	}
	for _, tr := range recs {
		_, _ = applyRecord(get, tr.off, tr.r) // the coordinator wrote only offsets in a transaction
	}
	out := map[string][]Commit{}
	for id, l := range scratch {
		for tp, o := range l.offsets {
			out[id] = append(out[id], Commit{TopicPartition: tp, Offset: o})
		}
	}
	return out
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
