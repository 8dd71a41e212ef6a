package load

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// KcatConfig is a producer that is librdkafka (kcat) rather than franz-go:
// batches of Batch records, each one kcat process with acks=all and
// idempotence on, one after the other until Stop. A batch counts as
// acknowledged when kcat exits 0 without reporting a failed delivery;
// kcat does not say at which offsets, so its records are checked by value
// only. Values are "kcat-<batch>-<record>", unique to the producer.
type KcatConfig struct {
	// Path is the kcat binary.
	Path    string
	Brokers []string
	Topic   string
	Batch   int
	// Timeout is librdkafka's message.timeout.ms: how long a batch may
	// retry through a fault before it counts as failed.
	Timeout time.Duration
}

// Kcat is a running kcat producer.
type Kcat struct {
	cfg    KcatConfig
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	acked    []string
	failed   int
	firstErr string
}

// KcatResult is what the kcat producer was told.
type KcatResult struct {
	// Acked are the acknowledged values; Failed the batches that were not
	// (a failed delivery, or still running when Stop killed kcat).
	Acked      []string
	Failed     int
	FirstError string
}

// StartKcat starts producing; Stop ends it.
func StartKcat(ctx context.Context, cfg KcatConfig) (*Kcat, error) {
	if cfg.Path == "" || len(cfg.Brokers) == 0 || cfg.Topic == "" || cfg.Batch < 1 {
		return nil, configErr("a kcat producer needs kcat, brokers, a topic and a batch size")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	k := &Kcat{cfg: cfg, cancel: cancel, done: make(chan struct{})}
	go k.run(ctx)
	return k, nil
}

// KcatValue is record i of batch b's value.
func KcatValue(b, i int) string { return fmt.Sprintf("kcat-%06d-%03d", b, i) }

func (k *Kcat) run(ctx context.Context) {
	defer close(k.done)
	for b := 0; ctx.Err() == nil; b++ {
		var in bytes.Buffer
		vals := make([]string, k.cfg.Batch)
		for i := range vals {
			vals[i] = KcatValue(b, i)
			fmt.Fprintln(&in, vals[i])
		}
		cmd := exec.CommandContext(ctx, k.cfg.Path, "-b", strings.Join(k.cfg.Brokers, ","), "-P", "-t", k.cfg.Topic,
			"-X", "acks=all", "-X", "enable.idempotence=true",
			"-X", fmt.Sprintf("message.timeout.ms=%d", k.cfg.Timeout.Milliseconds()))
		cmd.Stdin = &in
		out, err := cmd.CombinedOutput()
		ok := err == nil && ctx.Err() == nil && !bytes.Contains(out, []byte("Failed to deliver"))
		k.mu.Lock()
		if ok {
			k.acked = append(k.acked, vals...)
		} else {
			k.failed++
			if k.firstErr == "" && ctx.Err() == nil {
				k.firstErr = fmt.Sprintf("%v: %s", err, bytes.TrimSpace(out))
			}
		}
		k.mu.Unlock()
	}
}

// Stop kills the batch in flight (it counts as failed) and returns what
// was acknowledged.
func (k *Kcat) Stop() KcatResult {
	k.cancel()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	return KcatResult{Acked: k.acked, Failed: k.failed, FirstError: k.firstErr}
}
