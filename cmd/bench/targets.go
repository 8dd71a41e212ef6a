package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/minikafka/minikafka/bench/matrix"
	"github.com/minikafka/minikafka/broker/harness"
	"github.com/minikafka/minikafka/engine"

	// The registry tells which engines exist and what they declare
	// (durable, instrumentable filesystem).
	_ "github.com/minikafka/minikafka/engines/all"
)

// Peer target names.
const (
	targetKfake = "kfake"
	targetNATS  = "nats"
)

// binaries are the programs the targets run; an error in place of one
// fails that target's cells with the reason, not the run.
type binaries struct {
	self         string // this command, for serve-kfake
	broker       string
	brokerErr    error
	peers        string
	peersErr     error
	franzGo      string
	natsVersion  string
	natsGoClient string
}

// buildTargets makes a matrix target of each name: a peer (kfake, nats)
// or an engine under mini-kafka's broker. An engine this binary does not
// know is still tried: the broker then says why it cannot start it.
func buildTargets(names []string, bins binaries, partitions int32, logs io.Writer) []matrix.Target {
	var out []matrix.Target
	for _, n := range names {
		switch n {
		case targetKfake:
			out = append(out, matrix.Target{
				TargetInfo: matrix.TargetInfo{Name: n, Kind: matrix.KindPeer,
					Note: "franz-go's in-memory fake cluster, never fsyncs: the protocol ceiling"},
				Start:  harness.Kfake(bins.self, partitions, logs),
				Driver: matrix.Kafka{},
			})
		case targetNATS:
			out = append(out, natsTarget(bins, logs))
		default:
			out = append(out, engineTarget(n, bins, partitions, logs))
		}
	}
	return out
}

func natsTarget(bins binaries, logs io.Writer) matrix.Target {
	t := matrix.Target{
		TargetInfo: matrix.TargetInfo{Name: targetNATS, Kind: matrix.KindPeer, Durable: true,
			Note: fmt.Sprintf("NATS JetStream %s, file storage, driven by nats.go %s", bins.natsVersion, bins.natsGoClient)},
		Driver: matrix.NATS{Bin: bins.peers},
	}
	if bins.peersErr != nil {
		t.Start = harness.Failing(bins.peersErr)
		return t
	}
	t.Start = harness.NATS(bins.peers, engine.DefaultSyncInterval, logs)
	return t
}

func engineTarget(name string, bins binaries, partitions int32, logs io.Writer) matrix.Target {
	t := matrix.Target{
		TargetInfo: matrix.TargetInfo{Name: name, Kind: matrix.KindEngine, Durable: true},
		Driver:     matrix.Kafka{},
	}
	if d, err := engine.Lookup(name); err == nil {
		// A non-durable engine's count would be the broker's state files
		// alone: not a figure about the engine.
		t.Durable, t.CountsFsyncs = d.Caps.Durable, d.Caps.Durable
		t.Note = "mini-kafka's broker over the " + name + " engine"
		if !d.Caps.Durable {
			t.Kind = matrix.KindReference
			t.Note += ", not durable: a reference line"
		}
	} else {
		t.Note = "not an engine of this build (" + err.Error() + ")"
	}
	if bins.brokerErr != nil {
		t.Start = harness.Failing(bins.brokerErr)
		return t
	}
	t.Start = harness.Broker(bins.broker, name, partitions, nil, logs)
	return t
}

// setupLines describe how the targets were started, for the report.
func setupLines(names []string, bins binaries, partitions int32) []string {
	lines := []string{
		fmt.Sprintf("broker: `%s %s` as a child process, fresh for every cell (built from ./cmd/broker)",
			filepath.Base(bins.broker), strings.Join(harness.BrokerArgs("ENGINE", "DIR", "ADDR", "METRICS_ADDR", "SYNC", partitions), " ")),
		"Kafka client: franz-go " + bins.franzGo + " in the benchmark process; acks=all uses the idempotent producer (5 requests in flight), acks=1 the plain one with 5 in flight; unkeyed records, no compression",
	}
	for _, n := range names {
		switch n {
		case targetKfake:
			lines = append(lines, "kfake: `bench serve-kfake` (this binary) as a child process: one in-memory broker")
		case targetNATS:
			lines = append(lines, fmt.Sprintf("nats: `peers nats-serve -dir DIR -sync SYNC` (module bench/peers: nats-server %s embedded, JetStream file storage; sync=always is JetStream's sync_interval: always) as a child process; its load is `peers nats-load` (nats.go %s, async publishes with the in-flight bound as the pending limit, an ordered consumer for reads) in a child process per phase",
				bins.natsVersion, bins.natsGoClient))
		}
	}
	return lines
}
