package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"syscall"
	"time"
)

// The faults, as cmd/bench's -faults names them.
const (
	KillLeader      = "kill-leader"
	StopLeader      = "stop-leader"
	IsolateLeader   = "isolate-leader"
	IsolateFollower = "isolate-follower"
	RestartAll      = "restart-all"
	FillFollower    = "fill-follower-disk"
	RollingRestart  = "rolling-restart"
	RollingUpgrade  = "rolling-upgrade"
)

// kind is one fault: whom it hits, how it starts, how long it lasts and
// how it heals.
type kind struct {
	doc        string
	disk       bool // the brokers need a filesystem of their own, of DiskBytes
	cutsLeader bool // the victim leads and is cut off from its followers: count what it acknowledges alone
	upgrade    bool // the cluster starts on Config.UpgradeFrom, and its first round moves it to Config.Bin
	target     func(context.Context, *cell) (target, error)
	inject     func(context.Context, *cell, target) error
	hold       func(Config) time.Duration
	// heal ends the fault; its note says what else it took (a broker
	// that died of its disk restarted, ...).
	heal func(context.Context, *cell, target) (string, error)
}

var kinds = map[string]kind{
	KillLeader: {
		doc:    "kill -9 of partition 0's leader, started again after the hold",
		target: leaderOf0,
		inject: func(_ context.Context, e *cell, tg target) error { return e.c.Kill(tg.victims[0]) },
		hold:   Config.hold,
		heal:   restart,
	},
	StopLeader: {
		doc:    "SIGSTOP of partition 0's leader for twice the session timeout, then SIGCONT",
		target: leaderOf0,
		inject: func(_ context.Context, e *cell, tg target) error { return e.signal(tg.victims[0], syscall.SIGSTOP) },
		hold:   Config.hold,
		heal: func(_ context.Context, e *cell, tg target) (string, error) {
			return "", e.signal(tg.victims[0], syscall.SIGCONT)
		},
	},
	IsolateLeader: {
		doc:        "partition 0's leader cut off from the other brokers (clients still reach it) for twice the session timeout",
		cutsLeader: true,
		target:     leaderOf0,
		inject:     func(_ context.Context, e *cell, tg target) error { return e.lab.Isolate(int(tg.victims[0])) },
		hold:       Config.hold,
		heal: func(_ context.Context, e *cell, tg target) (string, error) {
			return "", e.lab.Rejoin(int(tg.victims[0]))
		},
	},
	IsolateFollower: {
		doc:    "a follower of partition 0 cut off from everyone for twice the session timeout",
		target: followerOf0,
		inject: func(_ context.Context, e *cell, tg target) error { return e.lab.Cut(int(tg.victims[0])) },
		hold:   Config.hold,
		heal: func(_ context.Context, e *cell, tg target) (string, error) {
			return "", e.lab.Heal(int(tg.victims[0]))
		},
	},
	RestartAll: {
		doc: "kill -9 of every broker at once, all started again",
		target: func(context.Context, *cell) (target, error) {
			return target{victims: []int32{1, 2, 3}, affected: allPartitions()}, nil
		},
		inject: func(_ context.Context, e *cell, tg target) error {
			var errs []error
			for _, id := range tg.victims {
				errs = append(errs, e.signal(id, syscall.SIGKILL))
			}
			for _, id := range tg.victims {
				<-e.c.Node(id).Child().Exited()
			}
			return errors.Join(errs...)
		},
		hold: func(Config) time.Duration { return 0 },
		heal: func(ctx context.Context, e *cell, tg target) (string, error) {
			for _, id := range tg.victims {
				if err := e.c.Start(ctx, id); err != nil {
					return "", err
				}
			}
			return "", nil
		},
	},
	FillFollower: {
		doc:    "a follower of partition 0's filesystem filled to the last byte for twice the session timeout, then freed",
		disk:   true,
		target: followerOf0,
		inject: func(_ context.Context, e *cell, tg target) error { return e.disks.fill(int(tg.victims[0])) },
		hold:   Config.hold,
		heal: func(ctx context.Context, e *cell, tg target) (string, error) {
			id := tg.victims[0]
			if err := e.disks.free(int(id)); err != nil {
				return "", err
			}
			// A broker that met the full disk may still be on its way out
			// (a controlled shutdown first, bounded): wait for it to rejoin
			// every ISR or to exit, and start one that exited again, as a
			// supervisor (systemd, Kubernetes) would. One that exits later
			// (the ISR it was still listed in was stale) is started at the
			// next round's start (cell.supervise).
			if !exitsOrRejoins(ctx, e, id) {
				return "", nil
			}
			_, err := restart(ctx, e, tg)
			return fmt.Sprintf("broker %d exited on the full disk and was started again", id), err
		},
	},
	RollingRestart: {
		doc: "every broker in turn stopped with SIGTERM (a controlled shutdown) and started again once every ISR is full",
		target: func(context.Context, *cell) (target, error) {
			return target{victims: []int32{1, 2, 3}, affected: allPartitions()}, nil
		},
		inject: rollingRestart,
		hold:   func(Config) time.Duration { return 0 },
		heal:   func(context.Context, *cell, target) (string, error) { return "", nil },
	},
	RollingUpgrade: {
		doc: "the cluster started on an older build (-upgrade-from), then every broker in turn stopped with SIGTERM " +
			"and started on this build once every ISR is full; later rounds are rolling restarts on this build",
		upgrade: true,
		target: func(context.Context, *cell) (target, error) {
			return target{victims: []int32{1, 2, 3}, affected: allPartitions()}, nil
		},
		inject: func(ctx context.Context, e *cell, tg target) error {
			e.c.SetBin(e.cfg.Bin)
			return rollingRestart(ctx, e, tg)
		},
		hold: func(Config) time.Duration { return 0 },
		heal: func(context.Context, *cell, target) (string, error) { return "", nil },
	},
}

// rollingRestart stops each victim in turn with SIGTERM and starts it
// again, each once every ISR is full.
func rollingRestart(ctx context.Context, e *cell, tg target) error {
	for _, id := range tg.victims {
		if err := e.c.WaitISR(ctx, Topic, Brokers); err != nil {
			return err
		}
		if err := e.c.Stop(id); err != nil {
			return err
		}
		if _, err := restart(ctx, e, target{victims: []int32{id}}); err != nil {
			return err
		}
	}
	return nil
}

// Names are the faults, in the report's order.
func Names() []string {
	order := []string{KillLeader, StopLeader, IsolateLeader, IsolateFollower, RestartAll, FillFollower, RollingRestart, RollingUpgrade}
	if len(order) != len(kinds) {
		panic("faults: a fault is missing from Names: " + fmt.Sprint(slices.Sorted(maps.Keys(kinds))))
	}
	return order
}

// Doc says what fault name does.
func Doc(name string) string { return kinds[name].doc }

// CI are the faults of the CI profile.
var CI = []string{KillLeader, IsolateLeader, RollingRestart}

func allPartitions() map[int32]bool {
	m := map[int32]bool{}
	for p := range int32(Partitions) {
		m[p] = true
	}
	return m
}

// leaderOf0 is partition 0's leader, hitting the partitions it leads.
func leaderOf0(ctx context.Context, e *cell) (target, error) {
	td, err := e.c.WaitLeaders(ctx, Topic)
	if err != nil {
		return target{}, err
	}
	p0, ok := td.Partitions[0]
	if !ok {
		return target{}, errors.New("no partition 0")
	}
	tg := target{victims: []int32{p0.Leader}, affected: map[int32]bool{}, leader: true}
	for _, p := range td.Partitions {
		if p.Leader == p0.Leader {
			tg.affected[p.Partition] = true
		}
	}
	return tg, nil
}

// followerOf0 is a follower of partition 0 that leads nothing if there is
// one (else the first follower), hitting every partition: each has it as
// a replica.
func followerOf0(ctx context.Context, e *cell) (target, error) {
	td, err := e.c.WaitLeaders(ctx, Topic)
	if err != nil {
		return target{}, err
	}
	p0, ok := td.Partitions[0]
	if !ok {
		return target{}, errors.New("no partition 0")
	}
	leads := map[int32]bool{}
	for _, p := range td.Partitions {
		leads[p.Leader] = true
	}
	var pick int32 = -1
	for _, r := range p0.Replicas {
		if r == p0.Leader {
			continue
		}
		if pick < 0 || (!leads[r] && leads[pick]) {
			pick = r
		}
	}
	if pick < 0 {
		return target{}, errors.New("partition 0 has no follower")
	}
	return target{victims: []int32{pick}, affected: allPartitions()}, nil
}

// restart starts the victims again once their last registration is
// fenced (a node started before that may be listed by its previous one).
func restart(ctx context.Context, e *cell, tg target) (string, error) {
	for _, id := range tg.victims {
		if err := e.c.WaitFenced(ctx, id); err != nil {
			return "", err
		}
		if err := e.c.Start(ctx, id); err != nil {
			return "", err
		}
	}
	return "", nil
}

// signal sends sig to node id's process.
func (e *cell) signal(id int32, sig syscall.Signal) error {
	ch := e.c.Node(id).Child()
	if ch == nil {
		return fmt.Errorf("broker %d never started", id)
	}
	if err := syscall.Kill(ch.Pid(), sig); err != nil {
		return fmt.Errorf("broker %d: %v: %w", id, sig, err)
	}
	return nil
}

// exitsOrRejoins waits until node id has exited (true) or every ISR is
// full with it running (false), within isrBound.
func exitsOrRejoins(ctx context.Context, e *cell, id int32) bool {
	ctx, cancel := context.WithTimeout(ctx, isrBound)
	defer cancel()
	isr := make(chan struct{})
	go func() {
		defer close(isr)
		_ = e.c.WaitISR(ctx, Topic, Brokers)
	}()
	select {
	case <-e.c.Node(id).Child().Exited():
		cancel()
		<-isr
		return true
	case <-isr:
		return !e.c.Node(id).Running()
	}
}
