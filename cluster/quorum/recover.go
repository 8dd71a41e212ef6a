package quorum

import (
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// recovered is the raft state rebuilt from disk by recoverState.
type recovered struct {
	ms   *raft.MemoryStorage
	hs   raftpb.HardState
	snap raftpb.Snapshot // empty if none
}

// recoverState rebuilds raft's storage from the snapshot, the log and the
// hard state on disk, finishing what a crash interrupted (see the package
// documentation's recovery paragraph). cs is the voters' conf state.
func (d *disk) recoverState(cs raftpb.ConfState) (recovered, error) {
	var r recovered
	snap, err := d.loadSnapshot()
	if err != nil {
		return r, err
	}
	r.snap = snap
	si, st := snap.Metadata.Index, snap.Metadata.Term
	if si > 0 && !slices.Equal(sortedIDs(snap.Metadata.ConfState.Voters), cs.Voters) {
		return r, fmt.Errorf("%w: the snapshot's voters %v are not %v", ErrVotersChanged, snap.Metadata.ConfState.Voters, cs.Voters)
	}
	ents, err := d.readEntries()
	if err != nil {
		return r, err
	}
	start := uint64(d.log.StartOffset())
	switch {
	case si == 0 && start != 1:
		return r, fmt.Errorf("%w: the raft log starts at %d and there is no snapshot", ErrCorrupt, start)
	case si > 0 && start > si+1:
		return r, fmt.Errorf("%w: the raft log starts at %d, after the snapshot's index %d", ErrCorrupt, start, si)
	case si > 0 && start <= si && !holds(ents, start, si, st):
		// The log does not reach the snapshot, or diverges from it: a crash
		// cut short the install of a snapshot from the leader after SNAPSHOT
		// was written. Finish it.
		if err := d.resetLog(int64(si + 1)); err != nil {
			return r, err
		}
		ents, start = nil, si+1
	}

	r.ms = raft.NewMemoryStorage()
	if si > 0 && start < si {
		// Keep the tail behind the snapshot for slow followers: its first
		// entry is the storage's dummy (its term is all raft needs), the
		// snapshot is set over the entries it covers.
		dummy := raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: start, Term: ents[0].Term, ConfState: cs}}
		if err := r.ms.ApplySnapshot(dummy); err != nil {
			return r, fmt.Errorf("quorum: recover the log start: %w", err)
		}
		if err := r.ms.Append(ents[1:]); err != nil {
			return r, fmt.Errorf("quorum: recover entries: %w", err)
		}
		if _, err := r.ms.CreateSnapshot(si, &cs, snap.Data); err != nil {
			return r, fmt.Errorf("quorum: recover the snapshot: %w", err)
		}
	} else {
		if si > 0 {
			if err := r.ms.ApplySnapshot(snap); err != nil {
				return r, fmt.Errorf("quorum: recover the snapshot: %w", err)
			}
		}
		if err := r.ms.Append(after(ents, si)); err != nil {
			return r, fmt.Errorf("quorum: recover entries: %w", err)
		}
	}

	hs, err := d.loadHardState()
	if err != nil {
		return r, err
	}
	last, _ := r.ms.LastIndex()
	lastTerm, err := r.ms.Term(last)
	if err != nil {
		return r, fmt.Errorf("quorum: term of the last entry %d: %w", last, err)
	}
	// HARDSTATE is written after the entries and a received snapshot: a
	// crash in between leaves it behind them. The snapshot is committed, so
	// commit at least that far. A term the log already reached was never
	// voted in (a vote is durable before it is sent, and would have been
	// written with its term), so adopting it with no vote is safe.
	hs.Commit = max(hs.Commit, si)
	if lastTerm > hs.Term {
		hs.Term, hs.Vote = lastTerm, 0
	}
	if hs.Commit > last {
		return r, fmt.Errorf("%w: commit index %d is past the log's last index %d", ErrCorrupt, hs.Commit, last)
	}
	if !raft.IsEmptyHardState(hs) {
		if err := r.ms.SetHardState(hs); err != nil {
			return r, fmt.Errorf("quorum: recover the hard state: %w", err)
		}
	}
	r.hs = hs
	return r, nil
}

// holds reports whether ents, which start at index start, hold the entry
// (index, term).
func holds(ents []raftpb.Entry, start, index, term uint64) bool {
	if index < start || index-start >= uint64(len(ents)) {
		return false
	}
	return ents[index-start].Term == term
}

// after returns the entries of ents above index.
func after(ents []raftpb.Entry, index uint64) []raftpb.Entry {
	for i := range ents {
		if ents[i].Index > index {
			return ents[i:]
		}
	}
	return nil
}

func sortedIDs(ids []uint64) []uint64 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

// storage is raft's view of the log: a MemoryStorage whose conf state is
// always the voters. The quorum never reconfigures, so the conf state lives
// in META rather than in entries, and a fresh log needs no bootstrap entry.
type storage struct {
	*raft.MemoryStorage
	cs raftpb.ConfState
}

func (s storage) InitialState() (raftpb.HardState, raftpb.ConfState, error) {
	hs, _, err := s.MemoryStorage.InitialState()
	return hs, s.cs, err
}
