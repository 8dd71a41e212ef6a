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
	if snap.Metadata.Index > 0 && !slices.Equal(sortedIDs(snap.Metadata.ConfState.Voters), cs.Voters) {
		return r, fmt.Errorf("%w: the snapshot's voters %v are not %v", ErrVotersChanged, snap.Metadata.ConfState.Voters, cs.Voters)
	}
	ents, err := d.reconcileLog(snap)
	if err != nil {
		return r, err
	}
	if r.ms, err = buildStorage(snap, uint64(d.log.StartOffset()), ents, cs); err != nil {
		return r, err
	}
	r.hs, err = d.recoverHardState(r.ms, snap.Metadata.Index)
	return r, err
}

// reconcileLog reads the log and makes it agree with the snapshot: it must
// hold the snapshot's last entry or start right after it. A log that does
// not reach the snapshot, or diverges from it, is what a crash leaves when
// it cuts short the install of a snapshot from the leader after SNAPSHOT
// was written: the install is finished by emptying the log.
func (d *disk) reconcileLog(snap raftpb.Snapshot) ([]raftpb.Entry, error) {
	ents, err := d.readEntries()
	if err != nil {
		return nil, err
	}
	si, st := snap.Metadata.Index, snap.Metadata.Term
	start := uint64(d.log.StartOffset())
	switch {
	case si == 0 && start != 1:
		return nil, fmt.Errorf("%w: the raft log starts at %d and there is no snapshot", ErrCorrupt, start)
	case si > 0 && start > si+1:
		return nil, fmt.Errorf("%w: the raft log starts at %d, after the snapshot's index %d", ErrCorrupt, start, si)
	case si > 0 && start <= si && !holds(ents, start, si, st):
		if err := d.resetLog(int64(si + 1)); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return ents, nil
}

// buildStorage is raft's storage for a snapshot and the log entries from
// start on.
func buildStorage(snap raftpb.Snapshot, start uint64, ents []raftpb.Entry, cs raftpb.ConfState) (*raft.MemoryStorage, error) {
	ms := raft.NewMemoryStorage()
	si := snap.Metadata.Index
	if si > 0 && start < si && len(ents) > 0 {
		// Keep the tail behind the snapshot for slow followers: its first
		// entry is the storage's dummy (its term is all raft needs), and the
		// snapshot is set over the entries it covers.
		dummy := raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: start, Term: ents[0].Term, ConfState: cs}}
		if err := ms.ApplySnapshot(dummy); err != nil {
			return nil, fmt.Errorf("quorum: recover the log start: %w", err)
		}
		if err := ms.Append(ents[1:]); err != nil {
			return nil, fmt.Errorf("quorum: recover entries: %w", err)
		}
		if _, err := ms.CreateSnapshot(si, &cs, snap.Data); err != nil {
			return nil, fmt.Errorf("quorum: recover the snapshot: %w", err)
		}
		return ms, nil
	}
	if si > 0 {
		if err := ms.ApplySnapshot(snap); err != nil {
			return nil, fmt.Errorf("quorum: recover the snapshot: %w", err)
		}
	}
	if err := ms.Append(after(ents, si)); err != nil {
		return nil, fmt.Errorf("quorum: recover entries: %w", err)
	}
	return ms, nil
}

// recoverHardState reads HARDSTATE and sets it in ms. HARDSTATE is written
// after the entries and a received snapshot: a crash in between leaves it
// behind them. The snapshot is committed, so commit at least that far. A
// term the log already reached was never voted in (a vote is durable before
// it is sent, and would have been written with its term), so adopting it
// with no vote is safe.
func (d *disk) recoverHardState(ms *raft.MemoryStorage, snapIndex uint64) (raftpb.HardState, error) {
	hs, err := d.loadHardState()
	if err != nil {
		return hs, err
	}
	last, _ := ms.LastIndex()
	lastTerm, err := ms.Term(last)
	if err != nil {
		return hs, fmt.Errorf("quorum: term of the last entry %d: %w", last, err)
	}
	hs.Commit = max(hs.Commit, snapIndex)
	if lastTerm > hs.Term {
		hs.Term, hs.Vote = lastTerm, 0
	}
	if hs.Commit > last {
		return hs, fmt.Errorf("%w: commit index %d is past the log's last index %d", ErrCorrupt, hs.Commit, last)
	}
	if !raft.IsEmptyHardState(hs) {
		if err := ms.SetHardState(hs); err != nil {
			return hs, fmt.Errorf("quorum: recover the hard state: %w", err)
		}
	}
	return hs, nil
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
