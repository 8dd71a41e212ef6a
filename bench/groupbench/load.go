package groupbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProduceRate produces values of size bytes to topic (created with the
// Bench's partition count if missing) for d, as fast as franz-go's producer
// goes with acks=all, and returns the records acknowledged per second.
func (b *Bench) ProduceRate(ctx context.Context, topic string, d time.Duration, size int) (float64, error) {
	if err := b.ensureTopic(ctx, topic); err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	value := make([]byte, size)
	// Warm up: metadata and connections.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
		return 0, err
	}
	var (
		mu    sync.Mutex
		acked int64
		first error
	)
	start := time.Now()
	deadline := start.Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		// Produce blocks while franz-go's buffer is full: the loop runs at
		// the broker's pace.
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				first = cmpErr(first, err)
				return
			}
			acked++
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return 0, first
	}
	return float64(acked) / elapsed.Seconds(), nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
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
func (b *Bench) StartGroupLoad(ctx context.Context, groups int, topic string, heartbeat, commit time.Duration) (*GroupLoad, error) {
	if err := b.ensureTopic(ctx, topic); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
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
