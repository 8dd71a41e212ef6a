package sim

import (
	"github.com/google/uuid"

	"github.com/minikafka/minikafka/cluster"
)

// epochMonotony checks that epochs never go back in what a broker applies:
// each partition's leader and partition epochs, each broker's epoch, and
// the metadata offset itself (also across restarts: a quorum node applies
// only what is committed, and committed entries are on its disk).
type epochMonotony struct {
	parts   map[int32]map[tp][2]int32 // broker -> partition -> leader, partition epoch
	brokers map[int32]map[int32]int64 // broker -> broker id -> epoch
	offset  map[int32]uint64          // broker -> highest offset applied, any incarnation
	topics  map[uuid.UUID]bool
}

func (e *epochMonotony) init() {
	e.parts = map[int32]map[tp][2]int32{}
	e.brokers = map[int32]map[int32]int64{}
	e.offset = map[int32]uint64{}
	e.topics = map[uuid.UUID]bool{}
}

func (e *epochMonotony) started(s *Sim, b *broker) {
	e.parts[b.id] = map[tp][2]int32{}
	e.brokers[b.id] = map[int32]int64{}
}

func (e *epochMonotony) image(s *Sim, b *broker, img *cluster.Metadata) {
	if img.Offset() < e.offset[b.id] && b.store.Image() == img {
		// A restart restores the snapshot first: only below-the-snapshot
		// offsets may be seen again, and they are applied in order.
	}
	e.offset[b.id] = max(e.offset[b.id], img.Offset())
	parts, brokers := e.parts[b.id], e.brokers[b.id]
	for _, t := range img.Topics() {
		for i, p := range t.Partitions {
			k := tp{t.ID, int32(i)}
			if prev, ok := parts[k]; ok && (p.LeaderEpoch < prev[0] || p.PartitionEpoch < prev[1]) {
				s.violate("epoch-regression", "broker %d: %s-%d went from leader epoch %d, partition epoch %d to %d, %d",
					b.id, t.Name, i, prev[0], prev[1], p.LeaderEpoch, p.PartitionEpoch)
				return
			}
			parts[k] = [2]int32{p.LeaderEpoch, p.PartitionEpoch}
		}
	}
	for _, br := range img.Brokers() {
		if prev, ok := brokers[br.ID]; ok && br.Epoch < prev {
			s.violate("epoch-regression", "broker %d: broker %d's epoch went from %d to %d", b.id, br.ID, prev, br.Epoch)
			return
		}
		brokers[br.ID] = br.Epoch
	}
}
