package broker

import (
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/txn"
)

// ListTransactions: v0-2
//
// Behaviour:
//   - The transactional ids coordinated by this broker (an admin client
//     asks every broker), with their producer id and state, filtered by
//     state names (a name Kafka does not have comes back in
//     UnknownStateFilters), by producer ids, (v1+) by transactions open
//     longer than DurationFilterMillis, and (v2+) by a regular expression
//     the id must match (INVALID_REGULAR_EXPRESSION if it does not
//     compile).

func init() { register(66, 0, 2, handleListTransactions) }

func handleListTransactions(r *request) reply {
	req := r.body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	known := kmsg.TransactionStateStrings()
	var states []string
	for _, s := range req.StateFilters {
		if slices.Contains(known, s) {
			states = append(states, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	var pattern *regexp.Regexp
	if req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile(*req.TransactionalIDPattern); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return done(resp)
		}
	}
	now := r.s.cfg.Clock.Now()
	for _, c := range r.s.txns.all() {
		for _, m := range c.Metas() {
			switch {
			case len(req.StateFilters) > 0 && !slices.Contains(states, m.State.String()):
			case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, m.ProducerID):
			case req.DurationFilterMillis >= 0 && req.Version >= 1 &&
				(m.State != txn.Ongoing || now.Sub(m.Start).Milliseconds() < req.DurationFilterMillis):
			case pattern != nil && !pattern.MatchString(m.ID):
			default:
				st := kmsg.NewListTransactionsResponseTransactionState()
				st.TransactionalID, st.ProducerID, st.TransactionState = m.ID, m.ProducerID, m.State.String()
				resp.TransactionStates = append(resp.TransactionStates, st)
			}
		}
	}
	return done(resp)
}
