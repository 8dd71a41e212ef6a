package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench/load"
)

func init() {
	register(command{
		name:    "produce",
		summary: "produce TOPIC [-key K] [VALUE...]: values as arguments, else one record per stdin line",
		run:     runProduce,
	})
}

// maxLineBytes bounds one stdin record; longer lines are an error rather
// than an unbounded allocation.
const maxLineBytes = 8 << 20

type produceFlags struct {
	key         string
	keyDelim    string
	partition   int
	acks        string
	compression string
	verbose     bool
}

func runProduce(ctx context.Context, e *env, args []string) error {
	var f produceFlags
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	fs.StringVar(&f.key, "key", "", "key of every record (routed by Kafka's murmur2 partitioner)")
	fs.StringVar(&f.keyDelim, "key-delim", "", "split each stdin line at the first DELIM into key and value (like kcat -K)")
	fs.IntVar(&f.partition, "partition", -1, "produce to this partition instead of the partitioner's choice")
	fs.StringVar(&f.acks, "acks", "all", "acks: all, 1 or 0")
	fs.StringVar(&f.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4, zstd")
	fs.BoolVar(&f.verbose, "v", false, "print partition and offset of every record")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("produce needs a TOPIC")
	}
	topic, values := pos[0], pos[1:]
	opts, err := f.clientOpts(topic)
	if err != nil {
		return err
	}
	cl, err := e.client(append(opts, kgo.RecordDeliveryTimeout(e.timeout))...)
	if err != nil {
		return err
	}
	defer cl.Close()

	p := &producer{cl: cl, e: e, f: &f, topic: topic}
	if len(values) > 0 {
		for _, v := range values {
			p.send(ctx, v)
		}
	} else if err := p.sendLines(ctx); err != nil {
		return err
	}
	return p.finish(ctx)
}

func (f *produceFlags) clientOpts(topic string) ([]kgo.Opt, error) {
	// A topic that does not exist is created by a broker that auto-creates
	// topics, as kcat's produce does; kgo asks only when told to.
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation()}
	switch f.acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, usageErr("-acks %q: want all, 1 or 0", f.acks)
	}
	// One codec parser for the CLI and the load generator; a name it does
	// not know is the user's mistake, so a usage error.
	codec, err := load.Codec(f.compression)
	if err != nil {
		return nil, usageErr("-compression: %v", err)
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if f.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	} else {
		// murmur2 over the key bytes, as the Java client; unkeyed records
		// stick to one partition per batch.
		opts = append(opts, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	}
	return opts, nil
}

// producer sends records asynchronously (the client keeps per-partition
// order) and remembers the first failure.
type producer struct {
	cl    *kgo.Client
	e     *env
	f     *produceFlags
	topic string

	mu       sync.Mutex
	sent     int
	acked    int
	firstErr error
}

func (p *producer) send(ctx context.Context, line string) {
	r := &kgo.Record{Value: []byte(line)}
	switch {
	case p.f.keyDelim != "":
		if k, v, ok := strings.Cut(line, p.f.keyDelim); ok {
			r.Key, r.Value = []byte(k), []byte(v)
		}
	case p.f.key != "":
		r.Key = []byte(p.f.key)
	}
	if p.f.partition >= 0 {
		r.Partition = int32(p.f.partition)
	}
	p.sent++
	p.cl.Produce(ctx, r, p.done)
}

// done runs in the client's callback goroutine.
func (p *producer) done(r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.firstErr == nil {
			p.firstErr = err
		}
		return
	}
	p.acked++
	if p.f.verbose {
		fmt.Fprintf(p.e.stdout, "%s[%d]@%d\n", r.Topic, r.Partition, r.Offset)
	}
}

func (p *producer) sendLines(ctx context.Context) error {
	sc := bufio.NewScanner(p.e.stdin)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	for sc.Scan() {
		if ctx.Err() != nil {
			break
		}
		p.send(ctx, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	return nil
}

func (p *producer) finish(ctx context.Context) error {
	flushErr := p.cl.Flush(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstErr != nil {
		return fmt.Errorf("produce to %s: %d of %d records acknowledged: %w", p.topic, p.acked, p.sent, p.firstErr)
	}
	if flushErr != nil {
		return fmt.Errorf("produce to %s: flush: %w", p.topic, flushErr)
	}
	if p.acked != p.sent {
		return fmt.Errorf("produce to %s: %d of %d records acknowledged", p.topic, p.acked, p.sent)
	}
	fmt.Fprintf(p.e.stderr, "produced %d records to %s\n", p.acked, p.topic)
	return nil
}
