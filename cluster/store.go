package cluster

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Store holds the latest metadata image and is what the quorum replicates
// (quorum.StateMachine): Apply decodes a committed batch and applies it,
// Snapshot and Restore move whole images. Readers take Image() without
// locks; Changed wakes them when it moves.
//
// A batch Apply refuses (ErrRefused: decided on an image that moved on)
// still consumes its offset; the proposer reads why with Refusal.
type Store struct {
	img atomic.Pointer[Metadata]

	mu      sync.Mutex
	changed chan struct{}
	refused map[uint64]error // recent refusals by offset, for proposers
	order   []uint64         // refusal offsets, oldest first, to bound the map
	// recent are the last batches applied, for brokers that follow the
	// metadata log without being voters (Since); kept is the first offset
	// they may hold: a follower asking for less needs the snapshot.
	recent []Entry
	kept   uint64
	bytes  int
}

// Entry is one batch of the metadata log at its offset.
type Entry struct {
	Offset  uint64
	Payload []byte
}

// Bounds on the batches a Store keeps for followers.
const (
	recentKept      = 4096
	recentKeptBytes = 8 << 20
)

// refusalsKept bounds how many refusals a Store remembers: a proposer reads
// its own at once, so a handful is plenty.
const refusalsKept = 64

// NewStore returns a Store at the empty image.
func NewStore() *Store {
	s := &Store{changed: make(chan struct{}), refused: map[uint64]error{}, kept: 1}
	s.img.Store(Empty())
	return s
}

// Image is the latest image. Never modify it.
func (s *Store) Image() *Metadata { return s.img.Load() }

// Changed returns a channel closed at the next change of the image: take
// it, then read Image, then wait.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Apply applies the batch at index. A malformed payload is an error (the
// log holds something no controller wrote); a refused batch is not.
func (s *Store) Apply(index uint64, payload []byte) error {
	recs, err := DecodeBatch(payload)
	if err != nil {
		return fmt.Errorf("metadata entry %d: %w", index, err)
	}
	next, err := s.Image().Apply(index, recs)
	if err != nil && !errors.Is(err, ErrRefused) {
		return err
	}
	s.mu.Lock()
	s.recent = append(s.recent, Entry{Offset: index, Payload: payload})
	s.bytes += len(payload)
	for len(s.recent) > recentKept || s.bytes > recentKeptBytes {
		s.kept = s.recent[0].Offset + 1
		s.bytes -= len(s.recent[0].Payload)
		s.recent = s.recent[1:]
	}
	s.mu.Unlock()
	s.publish(next, index, err)
	return nil
}

// Since returns the batches applied at offset from and after, up to about
// maxBytes of payload (at least one), and false when from is older than the
// batches this Store still has: the caller then restores the snapshot. A
// broker that is not a voter follows the log this way.
func (s *Store) Since(from uint64, maxBytes int) ([]Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if from < s.kept {
		return nil, false
	}
	var out []Entry
	size := 0
	for _, e := range s.recent {
		if e.Offset < from {
			continue
		}
		if len(out) > 0 && size+len(e.Payload) > maxBytes {
			break
		}
		out = append(out, e)
		size += len(e.Payload)
	}
	return out, true
}

// Snapshot encodes the current image.
func (s *Store) Snapshot() ([]byte, error) { return s.Image().MarshalSnapshot() }

// Restore replaces the image with a snapshot's, taken at index.
func (s *Store) Restore(index uint64, data []byte) error {
	m, err := UnmarshalSnapshot(data)
	if err != nil {
		return err
	}
	if m.Offset() > index {
		return fmt.Errorf("cluster: snapshot at %d holds offset %d", index, m.Offset())
	}
	m.offset = index
	s.mu.Lock()
	s.recent, s.bytes, s.kept = nil, 0, index+1
	s.mu.Unlock()
	s.publish(m, index, nil)
	return nil
}

func (s *Store) publish(m *Metadata, index uint64, refusal error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.img.Store(m)
	if refusal != nil {
		s.refused[index] = refusal
		s.order = append(s.order, index)
		if len(s.order) > refusalsKept {
			delete(s.refused, s.order[0])
			s.order = s.order[1:]
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// Refusal is why the batch at index was refused, or nil if it was applied
// (or is too old to remember).
func (s *Store) Refusal(index uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[index]
}
