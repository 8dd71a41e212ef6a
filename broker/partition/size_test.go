package partition_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
	"github.com/minikafka/minikafka/engines/segment"
)

// SizeBytes grows with the committed batches on every engine: the segment
// files' bytes on segment, the batches' bytes elsewhere (exactly, for the
// engines without a Sizer); retention's DeleteBefore makes it smaller. A
// leader alone lags by 0.
func TestSizeBytes(t *testing.T) {
	for _, eng := range append([]string{memory.Name}, durableEngines...) {
		t.Run(eng, func(t *testing.T) {
			m := open(t, eng, t.TempDir(), engine.Options{})
			p := onePartition(t, m, "s")
			empty, err := p.SizeBytes()
			require.NoError(t, err)
			var data int64
			for i := range 10 {
				b := batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("v", 20)})
				data += int64(len(b))
				app, err := p.Append(b)
				require.NoError(t, err)
				require.NoError(t, p.WaitHighWatermark(ctxT(t), app.LastOffset+1), "batch %d", i)
			}
			size, err := p.SizeBytes()
			require.NoError(t, err)
			if eng == segment.Name {
				require.Greater(t, size, empty+data, "the batches and their framing")
			} else {
				require.Equal(t, empty+data, size, "the batches as stored")
			}
			require.Zero(t, p.OffsetLag())

			_, err = p.DeleteBefore(p.HighWatermark())
			require.NoError(t, err)
			after, err := p.SizeBytes()
			require.NoError(t, err)
			if eng != segment.Name { // segment removes whole segments only
				require.Less(t, after, size)
			}
		})
	}
}
