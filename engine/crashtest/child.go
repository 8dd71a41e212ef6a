package crashtest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// Environment variables the Kill parent sets for its child.
const (
	envChild = "MINIKAFKA_CRASHTEST_CHILD" // the engine's name: Run is the child
	envDir   = "MINIKAFKA_CRASHTEST_DIR"   // the log directory
	envSeed  = "MINIKAFKA_CRASHTEST_SEED"  // the child's seed
	envSync  = "MINIKAFKA_CRASHTEST_SYNC"  // the child's sync policy
)

const (
	// killWriters appenders share the log in the child, as a partition's
	// producers do.
	killWriters = 4
	// killSegmentBytes keeps segmented engines rolling during kill rounds.
	killSegmentBytes = 64 << 10
	// deleteOneIn: after each of its acknowledgements, the first appender
	// moves the log start with this chance (one in deleteOneIn).
	deleteOneIn = 6
	// killSyncInterval is the flush period of a child under SyncInterval:
	// short, so that kills land before, during and after flushes.
	killSyncInterval = 5 * time.Millisecond
)

// The child's protocol, one line per event on stdout, each written with a
// single write(2) after the event happened:
//
//	opening                       Open (the recovery) is about to be called
//	ack <base> <records> <size>   Sync returned nil for this batch (under
//	                              every policy, a promise that a kill spares it)
//	del <offset>                  DeleteBefore(offset) is about to be called
//	deleted <offset>              DeleteBefore(offset) returned nil
const (
	lineOpening = "opening"
	lineAck     = "ack"
	lineDel     = "del"
	lineDeleted = "deleted"
)

func killOptions(p engine.SyncPolicy) engine.Options {
	return engine.Options{Sync: p, SyncInterval: killSyncInterval, SegmentBytes: killSegmentBytes}
}

// runChild is the Kill model's child: it appends until it is killed and
// never returns. It exits by itself only when something fails (status 2) or
// when its stdin closes, which means the parent test is gone (status 3).
func runChild(d engine.Driver) {
	die := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "crashtest child (%s): "+format+"\n", append([]any{d.Name}, args...)...)
		os.Exit(2)
	}
	seed := childSeed(die)
	policy, err := engine.ParseSyncPolicy(os.Getenv(envSync))
	if err != nil {
		die("bad %s: %v", envSync, err)
	}
	fmt.Fprintln(os.Stdout, lineOpening)
	e, err := d.Open(os.Getenv(envDir), killOptions(policy))
	if err != nil {
		die("open: %v", err)
	}
	c := &child{e: e, die: die, assign: new(sync.Mutex), out: new(sync.Mutex)}
	for w := range killWriters {
		go c.appender(rand.New(rand.NewPCG(seed, uint64(w))), w == 0)
	}
	select {}
}

// childSeed reads the child's seed, and makes the child exit when its
// stdin closes (the parent test is gone).
func childSeed(die func(format string, args ...any)) uint64 {
	seed, err := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	if err != nil {
		die("bad %s: %v", envSeed, err)
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
	return seed
}

type child struct {
	e      engine.LogEngine
	tag    string // "" for the one log of Kill; " <id>" for a log of Store/Kill
	die    func(format string, args ...any)
	assign *sync.Mutex // offsets are assigned under it, as the broker's partition does
	out    *sync.Mutex // one line at a time on stdout, shared by every child of the process
}

func (c *child) say(format string, args ...any) {
	c.out.Lock()
	defer c.out.Unlock()
	if _, err := fmt.Fprintf(os.Stdout, format+"\n", args...); err != nil {
		c.die("write stdout: %v", err)
	}
}

// appender appends forever: offset under the lock, Sync outside it, then the
// acknowledgement. The deleter also moves the log start now and then.
func (c *child) appender(rng *rand.Rand, deleter bool) {
	ctx := context.Background()
	for {
		records := int32(1 + rng.IntN(10))
		size := 12 + rng.IntN(2000)
		if rng.IntN(50) == 0 {
			size = killSegmentBytes + rng.IntN(killSegmentBytes)
		}
		c.assign.Lock()
		b := enginetest.Batch(c.e.EndOffset(), records, size)
		err := c.e.Append(b)
		c.assign.Unlock()
		if err != nil {
			c.die("Append %s: %v", describe(b), err)
		}
		if err := c.e.Sync(ctx, b.NextOffset()); err != nil {
			c.die("Sync(%d): %v", b.NextOffset(), err)
		}
		c.say("%s%s %d %d %d", lineAck, c.tag, b.BaseOffset, b.Records, len(b.Data))
		if deleter && rng.IntN(deleteOneIn) == 0 {
			start, end := c.e.StartOffset(), c.e.EndOffset()
			off := start + (end-start)/3
			if off == start {
				continue
			}
			c.say("%s%s %d", lineDel, c.tag, off)
			if err := c.e.DeleteBefore(off); err != nil {
				c.die("DeleteBefore(%d): %v", off, err)
			}
			c.say("%s%s %d", lineDeleted, c.tag, off)
		}
	}
}
