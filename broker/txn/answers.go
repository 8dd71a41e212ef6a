package txn

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// What the broker (and the simulator, which drives the same Core) makes of
// the answers around the coordinator: a partition leader's code for one
// marker, and the coordinator's code for a verification.

// MarkerResult is what a partition leader's code for tp's marker means to
// the coordinator: nil when the marker is in, or moot (the partition is
// gone; a marker of a later epoch is there already), an error to try the
// job again otherwise.
func MarkerResult(tp TopicPartition, code int16) error {
	switch code {
	case 0, kerr.UnknownTopicOrPartition.Code, kerr.InvalidProducerEpoch.Code:
		return nil
	}
	return fmt.Errorf("%s: %w", tp, kerr.ErrorForCode(code))
}

// VerifyAnswer is the code a partition leader answers a transactional
// produce with when the coordinator answered its verification (add: KIP-890
// part 2's implicit add) with code. Codes a producer would retry the wrong
// way (the coordinator moving or loading) become NOT_ENOUGH_REPLICAS, which
// every client retries, as Kafka answers them.
func VerifyAnswer(code int16, add bool) int16 {
	switch code {
	case kerr.ConcurrentTransactions.Code:
		// KIP-890's second part: the clients that add partitions this way
		// retry it; older ones would not.
		if !add {
			return kerr.NotEnoughReplicas.Code
		}
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.RequestTimedOut.Code, kerr.UnknownServerError.Code:
		return kerr.NotEnoughReplicas.Code
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// CheckAdd is the answer to an AddPartitionsToTxn before the coordinator
// sees it: per partition, UNKNOWN_TOPIC_OR_PARTITION for one the
// coordinator's metadata does not have (its markers would have no leader
// to go to), TOPIC_AUTHORIZATION_FAILED for an internal topic's from a
// client, and OPERATION_NOT_ATTEMPTED for the others when any is refused;
// nil when every partition may be added.
func CheckAdd(tps []TopicPartition, exists func(TopicPartition) bool, internal func(topic string) bool, fromBroker bool) []int16 {
	codes := make([]int16, len(tps))
	bad := false
	for i, tp := range tps {
		switch {
		case internal(tp.Topic) && !fromBroker:
			codes[i], bad = kerr.TopicAuthorizationFailed.Code, true
		case tp.Partition < 0 || !exists(tp):
			codes[i], bad = kerr.UnknownTopicOrPartition.Code, true
		}
	}
	if !bad {
		return nil
	}
	for i := range codes {
		if codes[i] == 0 {
			codes[i] = kerr.OperationNotAttempted.Code
		}
	}
	return codes
}
