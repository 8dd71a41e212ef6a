package load

// Consumer groups, measured with franz-go group consumers: how many
// partitions change owner when a member joins (Churn), how long a group
// takes to settle after its last member joins (Settle), and a load of
// idle groups' heartbeats and commits (StartGroupLoad). The groups
// workload's steps and the groupinterop tests share them.

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
	"github.com/twmb/franz-go/pkg/kmsg"
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

// Groups measures groups on the Client's brokers, on topic Topic with
// Partitions partitions (created if missing).
type Groups struct {
	Client
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

func (b *Groups) startMember(group string, balancer kgo.GroupBalancer, hooks ...kgo.Hook) (*member, error) {
	cl, err := kgo.NewClient(
		kgo.WithHooks(hooks...),
		kgo.SeedBrokers(b.Brokers...),
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

// admin is a kadm client of the brokers and its closer.
func (b *Groups) admin() (*kadm.Client, func(), error) {
	adm, cl, err := b.Client.admin()
	if err != nil {
		return nil, nil, err
	}
	return adm, cl.Close, nil
}

func (b *Groups) ensureTopic(ctx context.Context, topic string) error {
	return EnsureTopic(ctx, b.Client, topic, int32(b.Partitions))
}

// waitSettled polls until group is Stable with n members that own every
// partition, each once, and returns that assignment.
func (b *Groups) waitSettled(ctx context.Context, adm *kadm.Client, group string, n int) (Assignment, error) {
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
func (b *Groups) Churn(ctx context.Context, members int, balancer kgo.GroupBalancer) (ChurnResult, error) {
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
func (b *Groups) Settle(ctx context.Context, n int) (time.Duration, error) {
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

// GroupLoad keeps groups one-member groups busy the way idle consumers
// are: a heartbeat every Heartbeat and an offset commit (of partition 0
// of topic, created if missing) every Commit, franz-go's defaults being
// 3 s and 5 s. Stop ends it and reports the first error.
type GroupLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
	// Requests counts heartbeats and commits sent.
	requests int64
}

// StartGroupLoad starts groups simulated members on one shared client.
func (b *Groups) StartGroupLoad(ctx context.Context, groups int, topic string, heartbeat, commit time.Duration) (*GroupLoad, error) {
	if err := b.ensureTopic(ctx, topic); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Brokers...))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &GroupLoad{cancel: cancel}
	var joined sync.WaitGroup
	for i := range groups {
		group := newGroupID(fmt.Sprintf("load%d", i))
		joined.Add(1)
		l.wg.Go(func() {
			memberID, gen, err := joinAlone(ctx, cl, group)
			joined.Done()
			if err == nil {
				err = runMember(ctx, cl, group, memberID, gen, topic, heartbeat, commit, l)
			}
			l.fail(err)
		})
	}
	joined.Wait() // every group formed: the load runs in full from here
	go func() { l.wg.Wait(); cl.Close() }()
	l.mu.Lock()
	err = l.err
	l.mu.Unlock()
	if err != nil {
		l.Stop()
		return nil, err
	}
	return l, nil
}

func (l *GroupLoad) fail(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// Requests returns how many heartbeats and commits were sent so far.
func (l *GroupLoad) Requests() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests
}

// Stop ends the load and returns the requests sent and the first error.
func (l *GroupLoad) Stop() (int64, error) {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests, l.err
}

// runMember heartbeats and commits as the group's only member until ctx
// ends.
func runMember(ctx context.Context, cl *kgo.Client, group, memberID string, gen int32, topic string, heartbeat, commit time.Duration, l *GroupLoad) error {
	hb := time.NewTicker(heartbeat)
	defer hb.Stop()
	cm := time.NewTicker(commit)
	defer cm.Stop()
	var offset int64
	for {
		var code int16
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-hb.C:
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.MemberID, req.Generation = group, memberID, gen
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			code = resp.ErrorCode
		case <-cm.C:
			offset++
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.MemberID, req.Generation = group, memberID, gen
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = topic
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset = 0, offset
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			code = resp.Topics[0].Partitions[0].ErrorCode
		}
		if code != 0 {
			return fmt.Errorf("group %s: %w", group, kerr.ErrorForCode(code))
		}
		l.mu.Lock()
		l.requests++
		l.mu.Unlock()
	}
}

// joinAlone forms a one-member group and returns the member id and
// generation.
func joinAlone(ctx context.Context, cl *kgo.Client, group string) (string, int32, error) {
	memberID := ""
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, memberID, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 45000, 60000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return "", 0, err
		}
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			memberID = resp.MemberID
			continue
		}
		if resp.ErrorCode != 0 {
			return "", 0, fmt.Errorf("join %s: %w", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = group, resp.MemberID, resp.Generation
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = resp.MemberID
		sync.GroupAssignment = append(sync.GroupAssignment, a)
		sresp, err := sync.RequestWith(ctx, cl)
		if err != nil {
			return "", 0, err
		}
		if sresp.ErrorCode != 0 {
			return "", 0, fmt.Errorf("sync %s: %w", group, kerr.ErrorForCode(sresp.ErrorCode))
		}
		return resp.MemberID, resp.Generation, nil
	}
}
