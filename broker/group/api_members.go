package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file and api_offsets.go, api_admin.go are the only places that
// convert between kmsg and the state machine's types.

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// JoinGroup serves JoinGroup v0-9. It blocks until the rebalance completes
// (or ctx ends, in which case the answer is an error nobody will read).
func (c *Coordinator) JoinGroup(ctx context.Context, cl Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	return c.StartJoinGroup(cl, req)(ctx)
}

// StartJoinGroup is JoinGroup in two phases: the group takes the request
// now, in the caller's order (a connection's requests are stepped in the
// order it sent them); the returned function waits for the answer.
func (c *Coordinator) StartJoinGroup(cl Client, req *kmsg.JoinGroupRequest) func(context.Context) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.MemberID = req.MemberID
	resp.Generation = -1
	now := func(context.Context) *kmsg.JoinGroupResponse { return resp }
	if !c.ValidGroupID(req.Group, false) {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return now
	}
	w, ch := c.newWaiter()
	jr := JoinRequest{
		Waiter:               w,
		MemberID:             req.MemberID,
		InstanceID:           deref(req.InstanceID),
		NewMemberID:          c.cfg.NewMemberID(cl.ID),
		RequireKnownMemberID: req.Version >= 4,
		SkipAssignmentOK:     req.Version >= 9,
		ClientID:             cl.ID,
		ClientHost:           cl.Host,
		ProtocolType:         req.ProtocolType,
		SessionTimeout:       millis(req.SessionTimeoutMillis),
		RebalanceTimeout:     millis(req.RebalanceTimeoutMillis),
	}
	if req.Version == 0 {
		jr.RebalanceTimeout = 0
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	if c.step(req.Group, true, func(g *Group, now time.Time) { g.Join(now, jr) }) == nil {
		c.forget(w)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return now
	}
	return func(ctx context.Context) *kmsg.JoinGroupResponse {
		r, ok := await(ctx, ch)
		if !ok {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		fillJoin(resp, r)
		return resp
	}
}

func fillJoin(resp *kmsg.JoinGroupResponse, r Reply) {
	resp.ErrorCode = r.Code
	if j := r.Join; j != nil {
		resp.MemberID = j.MemberID
		resp.Generation = j.Generation
		resp.LeaderID = j.Leader
		resp.SkipAssignment = j.SkipAssignment
		if j.ProtocolType != "" {
			resp.ProtocolType = &j.ProtocolType
		}
		if r.Code == 0 {
			resp.Protocol = &j.Protocol
		}
		for _, m := range j.Members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = m.MemberID
			if m.InstanceID != "" {
				rm.InstanceID = &m.InstanceID
			}
			rm.ProtocolMetadata = m.Metadata
			resp.Members = append(resp.Members, rm)
		}
	}
}

// SyncGroup serves SyncGroup v0-5. A follower blocks until the leader's
// assignment arrives; the leader until it is durable.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	return c.StartSyncGroup(req)(ctx)
}

// StartSyncGroup is SyncGroup in two phases, as StartJoinGroup.
func (c *Coordinator) StartSyncGroup(req *kmsg.SyncGroupRequest) func(context.Context) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	now := func(context.Context) *kmsg.SyncGroupResponse { return resp }
	if !c.ValidGroupID(req.Group, false) {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return now
	}
	w, ch := c.newWaiter()
	sr := SyncRequest{
		Waiter:       w,
		MemberID:     req.MemberID,
		InstanceID:   deref(req.InstanceID),
		Generation:   req.Generation,
		ProtocolType: deref(req.ProtocolType),
		Protocol:     deref(req.Protocol),
	}
	if len(req.GroupAssignment) > 0 {
		sr.Assignments = make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			sr.Assignments[a.MemberID] = a.MemberAssignment
		}
	}
	if c.step(req.Group, false, func(g *Group, now time.Time) { g.Sync(now, sr) }) == nil {
		c.forget(w)
		resp.ErrorCode = c.missingGroupCode(kerr.UnknownMemberID.Code)
		return now
	}
	return func(ctx context.Context) *kmsg.SyncGroupResponse {
		r, ok := await(ctx, ch)
		if !ok {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		resp.ErrorCode = r.Code
		if s := r.Sync; s != nil && r.Code == 0 {
			resp.ProtocolType = &s.ProtocolType
			resp.Protocol = &s.Protocol
			resp.MemberAssignment = s.Assignment
		}
		return resp
	}
}

// missingGroupCode is the answer when a group is not there: code, or
// COORDINATOR_NOT_AVAILABLE if the coordinator is closed.
func (c *Coordinator) missingGroupCode(code int16) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kerr.CoordinatorNotAvailable.Code
	}
	return code
}

// Heartbeat serves Heartbeat v0-4.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if !c.ValidGroupID(req.Group, false) {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	code := c.missingGroupCode(kerr.UnknownMemberID.Code)
	c.step(req.Group, false, func(g *Group, now time.Time) {
		code = g.Heartbeat(now, req.MemberID, deref(req.InstanceID), req.Generation)
	})
	resp.ErrorCode = code
	return resp
}

// LeaveGroup serves LeaveGroup v0-5: one member by id (v0-2, the top-level
// error code is that member's) or a list of members (v3+, a code each).
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !c.ValidGroupID(req.Group, false) {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	var leaving []LeaveMember
	if req.Version <= 2 {
		leaving = []LeaveMember{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			leaving = append(leaving, LeaveMember{MemberID: m.MemberID, InstanceID: deref(m.InstanceID)})
		}
	}
	codes := make([]int16, len(leaving))
	for i := range codes {
		codes[i] = kerr.UnknownMemberID.Code
	}
	found := c.step(req.Group, false, func(g *Group, now time.Time) {
		top, memberCodes := g.Leave(now, leaving)
		resp.ErrorCode = top
		if top == 0 {
			copy(codes, memberCodes)
		}
	})
	if found == nil {
		resp.ErrorCode = c.missingGroupCode(0)
	}
	if req.Version <= 2 {
		if resp.ErrorCode == 0 {
			resp.ErrorCode = codes[0]
		}
		return resp
	}
	if resp.ErrorCode != 0 {
		return resp
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = m.MemberID
		rm.InstanceID = m.InstanceID
		rm.ErrorCode = codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
