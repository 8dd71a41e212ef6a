package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	t0      = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	session = 10 * time.Second
	rebal   = 30 * time.Second
	delay   = 250 * time.Millisecond
)

func testSettings() Settings {
	return Settings{
		InitialRebalanceDelay: delay,
		MinSessionTimeout:     time.Second,
		MaxSessionTimeout:     time.Hour,
		MaxMembers:            10,
		MaxMetadataBytes:      1024,
	}
}

// harness drives one Group as the shell would, with stores completing at
// once unless failStores is set. It checks that every waiter is answered
// exactly once.
type harness struct {
	t          *testing.T
	g          *Group
	now        time.Time
	next       Waiter
	replies    map[Waiter]Reply
	answered   map[Waiter]bool
	stores     []Store
	failStores bool
	ids        int
}

func newHarness(t *testing.T) *harness {
	return &harness{
		t:        t,
		g:        NewGroup("g", testSettings(), t0),
		now:      t0,
		replies:  map[Waiter]Reply{},
		answered: map[Waiter]bool{},
	}
}

func (h *harness) waiter() Waiter {
	h.next++
	return h.next
}

func (h *harness) collect() {
	h.t.Helper()
	rd := h.g.Ready()
	for _, r := range rd.Replies {
		h.record(r)
	}
	for _, s := range rd.Stores {
		h.stores = append(h.stores, s)
		if h.failStores {
			h.g.StoreFailed(h.now, s)
			for _, r := range s.Replies {
				r.Code = kerr.CoordinatorNotAvailable.Code
				h.record(r)
			}
			h.collect()
			continue
		}
		for _, r := range s.Replies {
			h.record(r)
		}
	}
}

func (h *harness) record(r Reply) {
	h.t.Helper()
	require.False(h.t, h.answered[r.Waiter], "waiter %d answered twice", r.Waiter)
	h.answered[r.Waiter] = true
	h.replies[r.Waiter] = r
}

// reply returns w's answer; it fails if there is none yet.
func (h *harness) reply(w Waiter) Reply {
	h.t.Helper()
	r, ok := h.replies[w]
	require.True(h.t, ok, "waiter %d not answered", w)
	return r
}

func (h *harness) parked(w Waiter) bool { return !h.answered[w] }

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.g.Tick(h.now)
	h.collect()
}

// advanceTo ticks at NextDeadline until now reaches the target, as the
// shell's timer would.
func (h *harness) advanceTo(target time.Time) {
	for {
		next := h.g.NextDeadline()
		if next.IsZero() || next.After(target) {
			break
		}
		h.now = maxTime(h.now, next)
		h.g.Tick(h.now)
		h.collect()
	}
	h.now = target
}

type joinOpt func(*JoinRequest)

func withInstance(id string) joinOpt { return func(r *JoinRequest) { r.InstanceID = id } }
func withProtocols(ps ...Protocol) joinOpt {
	return func(r *JoinRequest) { r.Protocols = ps }
}
func withMeta(meta string) joinOpt {
	return func(r *JoinRequest) { r.Protocols = []Protocol{{Name: "range", Metadata: []byte(meta)}} }
}
func oldVersion() joinOpt {
	return func(r *JoinRequest) { r.RequireKnownMemberID, r.SkipAssignmentOK = false, false }
}
func withSession(d time.Duration) joinOpt { return func(r *JoinRequest) { r.SessionTimeout = d } }

func (h *harness) joinReq(memberID string, opts ...joinOpt) JoinRequest {
	h.ids++
	r := JoinRequest{
		Waiter:               h.waiter(),
		MemberID:             memberID,
		NewMemberID:          fmt.Sprintf("m%d", h.ids),
		RequireKnownMemberID: true,
		SkipAssignmentOK:     true,
		ClientID:             "client",
		ClientHost:           "/127.0.0.1",
		ProtocolType:         "consumer",
		Protocols:            []Protocol{{Name: "range", Metadata: []byte("sub")}},
		SessionTimeout:       session,
		RebalanceTimeout:     rebal,
	}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// join sends one JoinGroup and returns its waiter.
func (h *harness) join(memberID string, opts ...joinOpt) Waiter {
	h.t.Helper()
	r := h.joinReq(memberID, opts...)
	h.g.Join(h.now, r)
	h.collect()
	return r.Waiter
}

// newMember does the v4+ two-step join and returns the parked waiter and
// the member id.
func (h *harness) newMember(opts ...joinOpt) (Waiter, string) {
	h.t.Helper()
	w := h.join("", opts...)
	r := h.reply(w)
	require.Equal(h.t, kerr.MemberIDRequired.Code, r.Code)
	id := r.Join.MemberID
	return h.join(id, opts...), id
}

func (h *harness) sync(memberID string, gen int32, assign map[string][]byte) Waiter {
	h.t.Helper()
	w := h.waiter()
	h.g.Sync(h.now, SyncRequest{Waiter: w, MemberID: memberID, Generation: gen, Assignments: assign})
	h.collect()
	return w
}

func (h *harness) heartbeat(memberID string, gen int32) int16 {
	code := h.g.Heartbeat(h.now, memberID, "", gen)
	h.collect()
	return code
}

// stable forms a group of n dynamic members and returns their ids (the
// first is the leader), with assignment "a-<id>" each.
func (h *harness) stable(n int) []string {
	h.t.Helper()
	var ws []Waiter
	var ids []string
	for range n {
		w, id := h.newMember()
		ws = append(ws, w)
		ids = append(ids, id)
	}
	h.advance(delay)
	gen := h.g.Generation()
	assign := map[string][]byte{}
	for _, id := range ids {
		assign[id] = []byte("a-" + id)
	}
	leader := h.reply(ws[0]).Join.Leader
	var syncs []Waiter
	for i, w := range ws {
		r := h.reply(w)
		require.Zero(h.t, r.Code)
		require.Equal(h.t, leader, r.Join.Leader)
		if ids[i] != leader {
			syncs = append(syncs, h.sync(ids[i], gen, nil))
		}
	}
	syncs = append(syncs, h.sync(leader, gen, assign))
	for _, w := range syncs {
		require.Zero(h.t, h.reply(w).Code)
	}
	require.Equal(h.t, Stable, h.g.State())
	return ids
}

func assertCode(t *testing.T, want *kerr.Error, got int16) {
	t.Helper()
	var wantCode int16
	name := "NONE"
	if want != nil {
		wantCode, name = want.Code, want.Message
	}
	require.Equal(t, wantCode, got, "want %s, got %v", name, kerr.ErrorForCode(got))
}
