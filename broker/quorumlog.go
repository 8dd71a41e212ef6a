package broker

import (
	"context"
	"log/slog"
)

// quorumLogger is the logger the quorum and its transport get: theirs name
// nodes by raft id (node id + 1, see raftID), which an operator reading
// "leader=2" would take for node 2; this one turns every id they log
// (raft-id, leader, was, peer, from, to, voters) back into node ids.
func quorumLogger(l *slog.Logger, component string) *slog.Logger {
	return slog.New(raftIDHandler{l.Handler()}).With("component", component)
}

// raftIDKeys are the attributes through which the quorum logs raft ids,
// with the name each gets in the broker's log.
var raftIDKeys = map[string]string{
	"raft-id": "node", "leader": "leader", "was": "was", "peer": "peer", "from": "from", "to": "to",
}

type raftIDHandler struct{ slog.Handler }

func (h raftIDHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(asNodeID(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h raftIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	mapped := make([]slog.Attr, len(as))
	for i, a := range as {
		mapped[i] = asNodeID(a)
	}
	return raftIDHandler{h.Handler.WithAttrs(mapped)}
}

func (h raftIDHandler) WithGroup(name string) slog.Handler {
	return raftIDHandler{h.Handler.WithGroup(name)}
}

// asNodeID rewrites a raft id attribute as a node id (-1 for raft's none),
// and the voter list as node ids.
func asNodeID(a slog.Attr) slog.Attr {
	if ids, ok := a.Value.Any().([]uint64); ok && a.Key == "voters" {
		nodes := make([]int32, len(ids))
		for i, id := range ids {
			nodes[i] = nodeID(id)
		}
		return slog.Any(a.Key, nodes)
	}
	key, ok := raftIDKeys[a.Key]
	if !ok || a.Value.Kind() != slog.KindUint64 {
		return a
	}
	return slog.Int64(key, int64(nodeID(a.Value.Uint64())))
}
