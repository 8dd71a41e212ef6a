// Package groupbench measures consumer groups with franz-go group
// consumers: how many partitions change owner when a member joins (churn),
// how long a group takes to settle after its last member joins, and what
// the heartbeats and commits of many groups cost produce throughput. Run
// is the groups profile of cmd/bench, which writes results/groups.md and
// groups.json; Bench measures any running broker, and the groupinterop
// tests check the churn bound with it.
package groupbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

var groupSeq atomic.Int64

// newGroupID returns a group id not used before by this process.
func newGroupID(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), groupSeq.Add(1))
}

// Assignment is who owns which partitions of the measured topic.
type Assignment map[string][]int32

// Owners maps each partition to its member.
func (a Assignment) Owners() map[int32]string {
	o := map[int32]string{}
	for m, ps := range a {
		for _, p := range ps {
			o[p] = m
		}
	}
	return o
}

// Covers reports whether every partition in [0, n) has exactly one owner.
func (a Assignment) Covers(n int) bool {
	count := map[int32]int{}
	for _, ps := range a {
		for _, p := range ps {
			count[p]++
		}
	}
	if len(count) != n {
		return false
	}
	for p, c := range count {
		if c != 1 || p < 0 || int(p) >= n {
			return false
		}
	}
	return true
}

// Bench measures groups on the brokers at Addrs, on topic Topic with
// Partitions partitions (created if missing).
type Bench struct {
	Addrs      []string
	Topic      string
	Partitions int
	// Poll is how often the group's state is read while waiting for it to
	// settle; it bounds the measurements' resolution.
	Poll time.Duration
}

// member is one running group consumer.
type member struct {
	cl   *kgo.Client
	done chan struct{}
}

func (b *Bench) startMember(group string, balancer kgo.GroupBalancer, hooks ...kgo.Hook) (*member, error) {
	cl, err := kgo.NewClient(
		kgo.WithHooks(hooks...),
		kgo.SeedBrokers(b.Addrs...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(b.Topic),
		kgo.Balancers(balancer),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	m := &member{cl: cl, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			if fs.Err() != nil {
				time.Sleep(50 * time.Millisecond) // do not spin on a repeated error
			}
		}
	}()
	return m, nil
}

func (m *member) close() {
	m.cl.Close()
	<-m.done
}

func (b *Bench) admin() (*kadm.Client, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// Prepare creates the topic unless it exists.
func (b *Bench) Prepare(ctx context.Context) error { return b.ensureTopic(ctx, b.Topic) }

// ensureTopic creates topic with the Bench's partition count unless it
// exists.
func (b *Bench) ensureTopic(ctx context.Context, topic string) error {
	adm, done, err := b.admin()
	if err != nil {
		return err
	}
	defer done()
	_, err = adm.CreateTopic(ctx, int32(b.Partitions), 1, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	return nil
}

// waitSettled polls until group is Stable with n members that own every
// partition, each once, and returns that assignment.
func (b *Bench) waitSettled(ctx context.Context, adm *kadm.Client, group string, n int) (Assignment, error) {
	for {
		a, state, err := Describe(ctx, adm, group, b.Topic)
		if err == nil && state == "Stable" && len(a) == n && a.Covers(b.Partitions) {
			return a, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("group %s never settled on %d members (last: %s %v, %v): %w", group, n, state, a, err, ctx.Err())
		case <-time.After(b.Poll):
		}
	}
}

// Describe returns group's state and each member's partitions of topic,
// sorted, from DescribeGroups.
func Describe(ctx context.Context, adm *kadm.Client, group, topic string) (Assignment, string, error) {
	gs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, "", err
	}
	g := gs[group]
	if g.Err != nil {
		return nil, g.State, g.Err
	}
	a := Assignment{}
	for _, m := range g.Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil, g.State, fmt.Errorf("member %s: no consumer assignment", m.MemberID)
		}
		a[m.MemberID] = []int32{}
		for _, t := range c.Topics {
			if t.Topic == topic {
				a[m.MemberID] = append(a[m.MemberID], t.Partitions...)
			}
		}
		slices.Sort(a[m.MemberID])
	}
	return a, g.State, nil
}

// ChurnResult is what one churn measurement found.
type ChurnResult struct {
	Balancer string
	Members  int // before the new one joined
	// Moved counts partitions whose owner changed when the member joined.
	Moved         int
	Before, After Assignment
	// Settle is from the new member's start until the group is settled
	// again (with a cooperative balancer, across both rebalances).
	Settle time.Duration
}

// Churn forms a group of members consumers using balancer, lets it settle,
// adds one more member and counts the partitions that changed owner.
func (b *Bench) Churn(ctx context.Context, members int, balancer kgo.GroupBalancer) (ChurnResult, error) {
	res := ChurnResult{Balancer: balancer.ProtocolName(), Members: members}
	adm, done, err := b.admin()
	if err != nil {
		return res, err
	}
	defer done()
	group := newGroupID("churn")
	var ms []*member
	defer func() {
		for _, m := range ms {
			m.close()
		}
	}()
	for range members {
		m, err := b.startMember(group, balancer)
		if err != nil {
			return res, err
		}
		ms = append(ms, m)
	}
	if res.Before, err = b.waitSettled(ctx, adm, group, members); err != nil {
		return res, err
	}
	start := time.Now()
	m, err := b.startMember(group, balancer)
	if err != nil {
		return res, err
	}
	ms = append(ms, m)
	if res.After, err = b.waitSettled(ctx, adm, group, members+1); err != nil {
		return res, err
	}
	res.Settle = time.Since(start)
	before, after := res.Before.Owners(), res.After.Owners()
	for p, owner := range before {
		if after[p] != owner {
			res.Moved++
		}
	}
	return res, nil
}

// joinClock remembers when the latest JoinGroup was written by any of the
// clients it hooks.
type joinClock struct {
	mu   sync.Mutex
	last time.Time
}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (j *joinClock) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	const joinGroupKey = 11
	if key != joinGroupKey || err != nil {
		return
	}
	now := time.Now()
	j.mu.Lock()
	j.last = now
	j.mu.Unlock()
}

func (j *joinClock) latest() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.last
}

// Settle starts n consumers at once and returns the time from the last
// JoinGroup any of them wrote (each joins twice: once for its member id)
// until the group is Stable with all n owning every partition, as polling
// sees it.
func (b *Bench) Settle(ctx context.Context, n int) (time.Duration, error) {
	adm, done, err := b.admin()
	if err != nil {
		return 0, err
	}
	defer done()
	group := newGroupID("settle")
	joins := &joinClock{}
	ms := make([]*member, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ms[i], errs[i] = b.startMember(group, kgo.CooperativeStickyBalancer(), joins) })
	}
	wg.Wait()
	defer func() {
		for _, m := range ms {
			if m != nil {
				m.close()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if _, err := b.waitSettled(ctx, adm, group, n); err != nil {
		return 0, err
	}
	return time.Since(joins.latest()), nil
}
