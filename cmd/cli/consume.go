package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register(command{
		name:    "consume",
		summary: "consume TOPIC [-group G] [-from-beginning] [-n N] [-keys] [-partition P]: print record values, one per line",
		run:     runConsume,
	})
}

type consumeFlags struct {
	fromBeginning bool
	n             int
	keys          bool
	keySep        string
	partition     int
	group         string
	offsets       bool
	idle          time.Duration
}

func runConsume(ctx context.Context, e *env, args []string) error {
	var f consumeFlags
	fs := flag.NewFlagSet("consume", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	fs.BoolVar(&f.fromBeginning, "from-beginning", false, "start at the log start instead of the end")
	fs.IntVar(&f.n, "n", 0, "exit after N records (0: until interrupted)")
	fs.BoolVar(&f.keys, "keys", false, "print KEY<sep>VALUE")
	fs.StringVar(&f.keySep, "key-sep", "\t", "separator between key and value with -keys")
	fs.IntVar(&f.partition, "partition", -1, "read only this partition")
	fs.StringVar(&f.group, "group", "", "consume as a member of this consumer group, committing what was printed (-from-beginning applies when the group has no committed offset)")
	fs.BoolVar(&f.offsets, "offsets", false, "prefix each line with partition and offset (P@O<TAB>)")
	fs.DurationVar(&f.idle, "idle", 0, "exit when no record arrives for this long (0: wait forever)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("consume needs exactly one TOPIC, got %q", pos)
	}
	if f.n < 0 {
		return usageErr("-n must be at least 0")
	}
	topic := pos[0]
	start := kgo.NewOffset().AtEnd()
	if f.fromBeginning {
		start = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{kgo.ConsumeResetOffset(start)}
	switch {
	case f.group != "" && f.partition >= 0:
		return usageErr("-group and -partition do not go together: the group assigns partitions")
	case f.group != "":
		// Commit only what was printed: marks are committed periodically and
		// once more on the way out.
		opts = append(opts, kgo.ConsumerGroup(f.group), kgo.ConsumeTopics(topic), kgo.AutoCommitMarks())
	case f.partition >= 0:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(f.partition): start}}))
	default:
		opts = append(opts, kgo.ConsumeTopics(topic))
	}
	cl, err := e.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	err = consumeLoop(ctx, e, cl, &f)
	if f.group != "" {
		cctx, cancel := context.WithTimeout(context.Background(), e.timeout)
		defer cancel()
		if cerr := cl.CommitMarkedOffsets(cctx); cerr != nil && err == nil {
			err = fmt.Errorf("commit offsets of group %s: %w", f.group, cerr)
		}
	}
	return err
}

// consumeLoop prints records until -n are printed, the context ends or the
// consumer is idle for -idle.
func consumeLoop(ctx context.Context, e *env, cl *kgo.Client, f *consumeFlags) error {
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	printed := 0
	for f.n == 0 || printed < f.n {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if f.idle > 0 {
			pctx, cancel = context.WithTimeout(ctx, f.idle)
		}
		max := -1
		if f.n > 0 {
			max = f.n - printed
		}
		fetches := cl.PollRecords(pctx, max)
		idle := f.idle > 0 && pctx.Err() != nil && ctx.Err() == nil
		cancel()
		if ctx.Err() != nil {
			return nil // interrupted: what was printed stands
		}
		if err := fetchErr(fetches); err != nil {
			return err
		}
		var shown []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			printRecord(w, r, f)
			shown = append(shown, r)
			printed++
		})
		if err := w.Flush(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if f.group != "" {
			cl.MarkCommitRecords(shown...)
		}
		if idle && fetches.NumRecords() == 0 {
			if f.n > 0 {
				return fmt.Errorf("idle for %v after %d of %d records", f.idle, printed, f.n)
			}
			return nil
		}
	}
	return nil
}

// fetchErr returns the first error that stops consuming; context ends are
// not errors here (the loop decides what they mean).
func fetchErr(fs kgo.Fetches) error {
	var first error
	fs.EachError(func(t string, p int32, err error) {
		if first != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		first = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
	})
	return first
}

func printRecord(w *bufio.Writer, r *kgo.Record, f *consumeFlags) {
	if f.offsets {
		fmt.Fprintf(w, "%d@%d\t", r.Partition, r.Offset)
	}
	if f.keys {
		w.Write(r.Key)
		w.WriteString(f.keySep)
	}
	w.Write(r.Value)
	w.WriteByte('\n')
}
