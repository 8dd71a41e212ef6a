package sim

// producerIDBlocks checks that no producer id is handed out twice: the
// blocks AllocateProducerIDs returns never overlap, across controllers and
// failovers.
type producerIDBlocks struct {
	blocks [][3]int64 // first, end, broker
}

func (p *producerIDBlocks) block(s *Sim, b *broker, first, n int64) {
	for _, bl := range p.blocks {
		if first < bl[1] && bl[0] < first+n {
			s.violate("duplicate-producer-id", "broker %d got producer ids [%d, %d), broker %d had [%d, %d)", b.id, first, first+n, bl[2], bl[0], bl[1])
			return
		}
	}
	p.blocks = append(p.blocks, [3]int64{first, first + n, int64(b.id)})
}
