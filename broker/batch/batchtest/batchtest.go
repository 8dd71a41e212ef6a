// Package batchtest builds real Kafka RecordBatch v2 bytes for tests
// (package batchcodec, with the testing helpers) and decodes stored
// batches back into records. Other packages' tests (the protocol server,
// groups) use it too.
package batchtest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/batch/batchcodec"
)

// Spec describes a batch (batchcodec.Spec).
type Spec = batchcodec.Spec

// Record is one decoded record (batchcodec.Record).
type Record = batchcodec.Record

// Build, Decode, Recrc and Values are batchcodec's.
var (
	Build  = batchcodec.Build
	Decode = batchcodec.Decode
	Recrc  = batchcodec.Recrc
	Values = batchcodec.Values
)

// Make is Build that fails the test on error.
func Make(t testing.TB, s Spec) []byte {
	t.Helper()
	b, err := Build(s)
	require.NoError(t, err, "build batch")
	return b
}

// Plain is an uncompressed, non-idempotent batch of n records.
func Plain(t testing.TB, n int) []byte {
	t.Helper()
	return Make(t, Spec{Values: Values("v", n), Timestamp: 1_700_000_000_000})
}

// Idempotent is an uncompressed batch of n records from producer id/epoch
// starting at sequence seq.
func Idempotent(t testing.TB, id int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	return Make(t, Spec{
		Values: Values(fmt.Sprintf("p%d-e%d-s%d", id, epoch, seq), n), Timestamp: 1_700_000_000_000,
		Idempotent: true, ProducerID: id, ProducerEpoch: epoch, BaseSequence: seq,
	})
}

// MustDecode is Decode that fails the test on error.
func MustDecode(t testing.TB, stored []byte) []Record {
	t.Helper()
	recs, err := Decode(stored)
	require.NoError(t, err, "decode stored batches")
	return recs
}
