package group

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups serves DescribeGroups v0-5. A group that does not exist is
// described as Dead with no error, as Kafka does.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.State = Dead.String()
		if !c.ValidGroupID(id, true) {
			rg.ErrorCode = kerr.InvalidGroupID.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		var d Description
		if c.step(id, false, func(g *Group, _ time.Time) { d = g.Describe() }) == nil {
			rg.ErrorCode = c.missingGroupCode(0)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State = d.State.String()
		rg.ProtocolType = d.ProtocolType
		rg.Protocol = d.Protocol
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID = m.MemberID
			if m.InstanceID != "" {
				rm.InstanceID = &m.InstanceID
			}
			rm.ClientID = m.ClientID
			rm.ClientHost = m.ClientHost
			rm.ProtocolMetadata = m.Metadata
			rm.MemberAssignment = m.Assignment
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// Describe returns one group's description, for in-process callers (the
// CLI's tests, metrics); false if there is no such group.
func (c *Coordinator) Describe(id string) (Description, bool) {
	var d Description
	ok := c.step(id, false, func(g *Group, _ time.Time) { d = g.Describe() }) != nil
	return d, ok
}

// ListGroups serves ListGroups v0-5, with the states filter (v4+) and the
// types filter (v5+: every group here is "classic").
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.ErrorCode = c.missingGroupCode(0)
	if resp.ErrorCode != 0 {
		return resp
	}
	if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(t string) bool {
		return strings.EqualFold(t, "classic")
	}) {
		return resp
	}
	for _, id := range c.groupIDs() {
		var (
			st State
			pt string
		)
		if c.step(id, false, func(g *Group, _ time.Time) { st, pt = g.State(), g.protocolType }) == nil {
			continue
		}
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(s string) bool {
			return strings.EqualFold(s, st.String())
		}) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group = id
		rg.ProtocolType = pt
		rg.GroupState = st.String()
		rg.GroupType = "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// DeleteGroups serves DeleteGroups v0-2: a group with no members loses its
// metadata and offsets (tombstones, answered once durable).
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	return c.StartDeleteGroups(req)(ctx)
}

// StartDeleteGroups is DeleteGroups in two phases, as StartJoinGroup.
func (c *Coordinator) StartDeleteGroups(req *kmsg.DeleteGroupsRequest) func(context.Context) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	waits := make([]func(context.Context) int16, len(req.Groups))
	for i, id := range req.Groups {
		waits[i] = c.startDelete(id)
	}
	return func(ctx context.Context) *kmsg.DeleteGroupsResponse {
		for i, id := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = id
			rg.ErrorCode = waits[i](ctx)
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

func (c *Coordinator) startDelete(id string) func(context.Context) int16 {
	code := func(code int16) func(context.Context) int16 {
		return func(context.Context) int16 { return code }
	}
	if !c.ValidGroupID(id, true) {
		return code(kerr.InvalidGroupID.Code)
	}
	w, ch := c.newWaiter()
	if c.step(id, false, func(g *Group, now time.Time) { g.Delete(now, w) }) == nil {
		c.forget(w)
		return code(c.missingGroupCode(kerr.GroupIDNotFound.Code))
	}
	return func(ctx context.Context) int16 {
		r, ok := await(ctx, ch)
		if !ok {
			return kerr.CoordinatorNotAvailable.Code
		}
		return r.Code
	}
}
