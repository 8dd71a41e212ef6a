package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/workloads"
)

// The steps of a transaction left open across other steps (see
// workloads.BeginTxn).

// txnID is the transactional id of begin_txn's producers.
const txnID = "bench-txn"

func (st *steps) beginTxn(ctx context.Context, prefix string, b *workloads.BeginTxn) error {
	octx, cancel := context.WithTimeout(ctx, outcomeWait)
	defer cancel()
	if err := st.newTxnProducer(octx, b.RecordBytes); err != nil {
		return err
	}
	if err := st.txn.Begin(octx, b.Records); err != nil {
		return err
	}
	st.txnOpen = b.Records
	st.set(prefix, map[string]float64{"records": float64(b.Records)})
	return nil
}

// newTxnProducer makes a fresh transactional client for the next
// transaction, on a cluster seeded with every running broker but the
// transactional id's coordinator: franz-go gives up an EndTxn when a
// FindCoordinator it sends while the coordinator fails over goes to a
// seed address that no longer answers (the brokers it learned from
// metadata it retries), and that would measure the client, not the
// failover.
func (st *steps) newTxnProducer(ctx context.Context, recordBytes int) error {
	if st.txn != nil {
		st.txn.Close()
		st.txn = nil
	}
	cl := st.client()
	if st.cluster != nil {
		coordinator, err := st.txnCoordinator(ctx)
		if err != nil {
			return err
		}
		cl.Brokers = nil
		for _, n := range st.cluster.Running() {
			if n.ID != coordinator {
				cl.Brokers = append(cl.Brokers, n.Addr)
			}
		}
	}
	// Retries bounded by franz-go's retry timeout (30 s), not by a count:
	// its 20 tries, 5 ms apart, can end before a coordinator has moved.
	cl.Opts = append(fastRetries(), append(cl.Opts, kgo.RequestRetries(1<<30))...)
	t, err := load.NewTxnProducer(load.ProduceConfig{Client: cl, Topic: st.loadTopic(), RecordBytes: recordBytes,
		Acks: "all", Linger: -1, DeliveryTimeout: outcomeWait, Txn: &load.Txn{ID: txnID}})
	if err != nil {
		return err
	}
	st.txn = t
	return nil
}

func (st *steps) endTxn(ctx context.Context, e *workloads.EndTxn) error {
	if st.txn == nil {
		return errors.New("end_txn needs a begin_txn before it")
	}
	// Not bounded by outcomeWait: a context that ends during EndTxn leaves
	// the transaction's outcome unknown; the transaction timeout bounds it.
	if err := st.txn.End(ctx, !e.Abort); err != nil {
		return err
	}
	// What a consume step reads.
	st.produced += st.txnOpen
	if e.Abort {
		st.aborted += st.txnOpen
	}
	st.txnOpen = 0
	return nil
}

// txnCoordinator is the broker FindCoordinator (key type 1) names for
// the transactional id of begin_txn, asked of any broker until one
// answers (the first ask creates __transaction_state).
func (st *steps) txnCoordinator(ctx context.Context) (int32, error) {
	c, err := st.needCluster("transaction_coordinator")
	if err != nil {
		return 0, err
	}
	cl, err := c.Client()
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorType = txnID, 1
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			if err = kerr.ErrorForCode(resp.ErrorCode); err == nil {
				return resp.NodeID, nil
			}
		}
		if !bench.Pause(ctx, probeEvery) {
			return 0, fmt.Errorf("no coordinator of %s: %w", txnID, err)
		}
	}
}
