package quorum

import (
	"context"
	"fmt"
	"log/slog"

	"go.etcd.io/raft/v3"
)

// raftLogger adapts raft.Logger to slog. Raft's debug and info chatter
// (every vote, every term change) goes at debug level: the Node logs the
// leader changes an operator cares about itself. Fatal and Panic log at
// error level and panic: raft calls them only when its own invariants break,
// and expects them not to return.
type raftLogger struct{ l *slog.Logger }

var _ raft.Logger = raftLogger{}

func (r raftLogger) log(level slog.Level, msg func() string) {
	if r.l.Enabled(context.Background(), level) {
		r.l.Log(context.Background(), level, msg(), "from", "raft")
	}
}

func sprint(v []any) func() string { return func() string { return fmt.Sprint(v...) } }
func sprintf(f string, v []any) func() string {
	return func() string { return fmt.Sprintf(f, v...) }
}

func (r raftLogger) Debug(v ...any)              { r.log(slog.LevelDebug, sprint(v)) }
func (r raftLogger) Debugf(f string, v ...any)   { r.log(slog.LevelDebug, sprintf(f, v)) }
func (r raftLogger) Info(v ...any)               { r.log(slog.LevelDebug, sprint(v)) }
func (r raftLogger) Infof(f string, v ...any)    { r.log(slog.LevelDebug, sprintf(f, v)) }
func (r raftLogger) Warning(v ...any)            { r.log(slog.LevelWarn, sprint(v)) }
func (r raftLogger) Warningf(f string, v ...any) { r.log(slog.LevelWarn, sprintf(f, v)) }
func (r raftLogger) Error(v ...any)              { r.log(slog.LevelError, sprint(v)) }
func (r raftLogger) Errorf(f string, v ...any)   { r.log(slog.LevelError, sprintf(f, v)) }

func (r raftLogger) Fatal(v ...any)            { r.die(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(f string, v ...any) { r.die(fmt.Sprintf(f, v...)) }
func (r raftLogger) Panic(v ...any)            { r.die(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(f string, v ...any) { r.die(fmt.Sprintf(f, v...)) }

func (r raftLogger) die(msg string) {
	r.l.Error(msg, "from", "raft")
	panic("raft: " + msg)
}
