package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/txn"
)

// DescribeTransactions: v0
//
// Behaviour:
//   - For each transactional id coordinated here: its state (Kafka's
//     names: Empty, Ongoing, PrepareCommit, ...), producer id and epoch,
//     timeout, the start of its transaction (-1 when none is open) and its
//     partitions. NOT_COORDINATOR for an id coordinated elsewhere,
//     COORDINATOR_NOT_AVAILABLE while nobody is, TRANSACTIONAL_ID_NOT_FOUND
//     for one never seen.

func init() { register(65, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(r *request) reply {
	req := r.body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		c, code := r.s.txnCoordinator(id)
		var m *txn.Meta
		if c != nil {
			var ok bool
			if m, ok = c.Meta(id); !ok {
				code = kerr.TransactionalIDNotFound.Code
			}
		}
		if m == nil {
			st.ErrorCode = code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State = m.State.String()
		st.TimeoutMillis = int32(m.Timeout.Milliseconds())
		st.ProducerID, st.ProducerEpoch = m.ProducerID, m.Epoch
		if !m.Start.IsZero() && m.State != txn.Empty {
			st.StartTimestamp = m.Start.UnixMilli()
		}
		for _, tp := range m.SortedPartitions() {
			if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				st.Topics = append(st.Topics, t)
			}
			st.Topics[len(st.Topics)-1].Partitions = append(st.Topics[len(st.Topics)-1].Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return done(resp)
}
