package group_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/group/grouptest"
	"github.com/minikafka/minikafka/clock"
)

// member is a minimal consumer: join (two steps), sync (the leader assigns
// nothing in particular), then heartbeat and commit its own partition,
// rejoining whenever the coordinator says so.
type member struct {
	c     *group.Coordinator
	group string
	index int32
	id    string
	gen   int32
}

func (m *member) join(ctx context.Context) error {
	for ctx.Err() == nil {
		r := m.c.JoinGroup(ctx, group.Client{ID: "stress"}, joinReq(m.group, m.id, 9, "", "sub"))
		switch r.ErrorCode {
		case kerr.MemberIDRequired.Code:
			m.id = r.MemberID
			continue
		case kerr.UnknownMemberID.Code:
			m.id = ""
			continue
		case kerr.RebalanceInProgress.Code:
			continue
		case 0:
		default:
			return fmt.Errorf("join: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		m.gen = r.Generation
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = m.group, m.id, m.gen
		for _, o := range r.Members {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = o.MemberID, []byte("x")
			sync.GroupAssignment = append(sync.GroupAssignment, a)
		}
		switch s := m.c.SyncGroup(ctx, sync); s.ErrorCode {
		case 0:
			return nil
		case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
		case kerr.UnknownMemberID.Code:
			m.id = ""
		default:
			return fmt.Errorf("sync: %v", kerr.ErrorForCode(s.ErrorCode))
		}
	}
	return ctx.Err()
}

func (m *member) run(ctx context.Context, commits int64) error {
	if err := m.join(ctx); err != nil {
		return err
	}
	for next := int64(1); next <= commits; {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = m.group, m.id, m.gen
		code := m.c.Heartbeat(hb).ErrorCode
		if code == 0 {
			req := commitReq(m.group, m.id, m.gen, tpo{"t", m.index, next})
			if code = commitCodes(m.c.OffsetCommit(req))[0]; code == 0 {
				next++
				continue
			}
		}
		switch code {
		case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code, kerr.UnknownMemberID.Code:
			if code == kerr.UnknownMemberID.Code {
				m.id = ""
			}
			if err := m.join(ctx); err != nil {
				return err
			}
		default:
			return fmt.Errorf("member %d: %v", m.index, kerr.ErrorForCode(code))
		}
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = m.group, m.id
	if code := m.c.LeaveGroup(leave).ErrorCode; code != 0 {
		return fmt.Errorf("leave: %v", kerr.ErrorForCode(code))
	}
	return nil
}

func TestConcurrentGroups(t *testing.T) {
	const groups, members, commits = 4, 3, 20
	c, err := group.Open(group.Config{
		Log:                   grouptest.NewMemLog(),
		Clock:                 clock.Real,
		InitialRebalanceDelay: -1,
	})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, groups*members)
	for g := range groups {
		for i := range members {
			m := &member{c: c, group: fmt.Sprintf("g%d", g), index: int32(i)}
			wg.Go(func() { errs <- m.run(ctx, commits) })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for g := range groups {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 7
		req.Group = fmt.Sprintf("g%d", g)
		resp := c.OffsetFetch(req)
		require.Len(t, resp.Topics, 1)
		var got []int64
		for _, p := range resp.Topics[0].Partitions {
			got = append(got, p.Offset)
		}
		assert.Equal(t, []int64{commits, commits, commits}, got)
		d, _ := c.Describe(req.Group)
		assert.Equal(t, group.Empty, d.State)
	}
}
