package cluster

import (
	"cmp"
	"math/rand/v2"
	"slices"
)

// place assigns rf replicas to each of n partitions over brokers,
// round-robin from a random start as Kafka does, so that leaders (the first
// replica) and followers spread evenly. With racks, brokers are ordered so
// that neighbours sit on different racks, which puts a partition's replicas
// on as many racks as there are.
func place(brokers []*Broker, n, rf int, rnd *rand.Rand) [][]int32 {
	order := rackAlternating(brokers)
	count := len(order)
	start := rnd.IntN(count)
	// Followers sit at distinct shifts in [1, count-1] from the first
	// replica; the shift grows every count partitions, so that partition
	// i+count does not repeat partition i's followers.
	shift := rnd.IntN(count)
	out := make([][]int32, n)
	for i := range n {
		if i > 0 && i%count == 0 {
			shift++
		}
		first := (start + i) % count
		replicas := []*Broker{order[first]}
		for j := range rf - 1 {
			step := 1 + (shift+j)%(count-1)
			replicas = append(replicas, pick(order, (first+step)%count, replicas))
		}
		for _, b := range replicas {
			out[i] = append(out[i], b.ID)
		}
	}
	return out
}

// pick is the broker for the next replica: order[k], or when that one's
// rack already holds a replica while some rack holds none, the next broker
// after it on such a rack. Without racks it is order[k].
func pick(order []*Broker, k int, chosen []*Broker) *Broker {
	used := map[string]bool{}
	for _, b := range chosen {
		used[b.Rack] = true
	}
	for i := range order {
		b := order[(k+i)%len(order)]
		if !used[b.Rack] && !slices.Contains(chosen, b) {
			return b
		}
	}
	for i := range order {
		if b := order[(k+i)%len(order)]; !slices.Contains(chosen, b) {
			return b
		}
	}
	panic("cluster: more replicas than brokers") // the caller checks rf
}

// rackAlternating orders brokers by id, and when they have racks
// interleaves the racks: a1, b1, c1, a2, b2, ...
func rackAlternating(brokers []*Broker) []*Broker {
	bs := slices.Clone(brokers)
	slices.SortFunc(bs, func(a, b *Broker) int { return cmp.Compare(a.ID, b.ID) })
	byRack := map[string][]*Broker{}
	var racks []string
	for _, b := range bs {
		if _, ok := byRack[b.Rack]; !ok {
			racks = append(racks, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	if len(racks) <= 1 {
		return bs
	}
	slices.Sort(racks)
	var out []*Broker
	for i := 0; len(out) < len(bs); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}
