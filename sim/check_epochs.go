package sim

import (
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/minikafka/minikafka/cluster"
)

// epochMonotony checks the metadata every broker applies, across brokers
// and incarnations: an incarnation never applies an older offset than it
// has; an offset is one image everywhere (the same batches below it); and
// in offset order, each partition's leader and partition epochs and each
// broker's epoch never go back, whichever broker and incarnation applied
// which offsets (a restarted broker replays its log from a snapshot, so
// its own sequence starts lower than where it stopped; the rule is the
// log's, not one process's).
type epochMonotony struct {
	applied map[[2]int]uint64     // broker, incarnation -> last offset applied
	images  map[uint64]uint64     // offset -> hash of the image
	parts   map[string][]epochsAt // partition -> its epochs by offset, sorted
	brokers map[int32][]epochsAt  // broker id -> its epoch by offset, sorted
}

// epochsAt are the epochs a name has at a metadata offset.
type epochsAt struct {
	offset uint64
	epochs [2]int64
}

func (e *epochMonotony) init() {
	e.applied = map[[2]int]uint64{}
	e.images = map[uint64]uint64{}
	e.parts = map[string][]epochsAt{}
	e.brokers = map[int32][]epochsAt{}
}

// image is broker b (incarnation gen) applying img.
func (e *epochMonotony) image(s *Sim, b int32, gen int, img *cluster.Metadata) {
	k := [2]int{int(b), gen}
	if last, ok := e.applied[k]; ok && img.Offset() < last {
		s.violate("metadata-regression", "broker %d applied metadata offset %d after %d", b, img.Offset(), last)
		return
	}
	e.applied[k] = img.Offset()
	data, err := img.MarshalSnapshot()
	if err != nil {
		s.violate("metadata", "broker %d: the image at offset %d does not marshal: %v", b, img.Offset(), err)
		return
	}
	h := fnv.New64a()
	h.Write(data)
	if prev, ok := e.images[img.Offset()]; ok && prev != h.Sum64() {
		s.violate("metadata-divergence", "broker %d's image at offset %d is not the one another broker applied there", b, img.Offset())
		return
	}
	e.images[img.Offset()] = h.Sum64()
	for _, t := range img.Topics() {
		for i, p := range t.Partitions {
			name := fmt.Sprintf("%s-%d", t.ID.String()[:8], i)
			at := epochsAt{img.Offset(), [2]int64{int64(p.LeaderEpoch), int64(p.PartitionEpoch)}}
			if !monotone(e.parts, name, at) {
				s.violate("epoch-regression", "broker %d: %s (%s) at metadata offset %d has leader epoch %d, partition epoch %d, against the offsets around it",
					b, t.Name, name, img.Offset(), p.LeaderEpoch, p.PartitionEpoch)
				return
			}
		}
	}
	for _, br := range img.Brokers() {
		if !monotone(e.brokers, br.ID, epochsAt{img.Offset(), [2]int64{br.Epoch, 0}}) {
			s.violate("epoch-regression", "broker %d: broker %d's epoch at metadata offset %d is %d, against the offsets around it", b, br.ID, img.Offset(), br.Epoch)
			return
		}
	}
}

// monotone records at in the sorted history of k and reports whether the
// epochs do not go back in offset order around it.
func monotone[K comparable](hist map[K][]epochsAt, k K, at epochsAt) bool {
	h := hist[k]
	i, found := slices.BinarySearchFunc(h, at.offset, func(x epochsAt, o uint64) int { return cmpOffsets(x.offset, o) })
	if found {
		return h[i].epochs == at.epochs // the same image everywhere: checked by its hash too
	}
	if i > 0 && later(h[i-1].epochs, at.epochs) || i < len(h) && later(at.epochs, h[i].epochs) {
		return false
	}
	hist[k] = slices.Insert(h, i, at)
	return true
}

func cmpOffsets(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// later reports whether a is past b in either epoch.
func later(a, b [2]int64) bool { return a[0] > b[0] || a[1] > b[1] }

// ahead checks that a replica's log holds no batch of a leader epoch
// above the one its role is at: a follower takes batches only from the
// leader of the epoch it knows (KIP-320), so what it appends never runs
// ahead of its metadata, which its truncations by epoch rely on.
func (e *epochMonotony) ahead(s *Sim, r view, logEpoch int32) {
	if logEpoch > r.epoch {
		s.violate("epoch-ahead", "broker %d %s: its log holds leader epoch %d, its role is at epoch %d", r.broker, r.tp, logEpoch, r.epoch)
	}
}
