package interop

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/interop/interoptest"
)

const kcatRecords = 300

// kcatTimeout bounds one kcat run; a consumer that never sees the end of a
// partition (-e) hangs until then.
const kcatTimeout = 30 * time.Second

// kcat runs kcat with args and stdin, failing the test on a non-zero exit.
func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, interoptest.KcatPath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kcat %s: no exit within %v (a consumer with -e waits for the end of every partition; rerun it by hand with -d protocol,fetch to see why it never gets there)\nstderr: %s",
			strings.Join(args, " "), kcatTimeout, errOut.String())
	}
	require.NoError(t, err, "kcat %s\nstderr: %s", strings.Join(args, " "), errOut.String())
	// kcat reports failed deliveries on stderr; some versions still exit 0.
	require.NotContains(t, errOut.String(), "ERROR", "kcat %s", strings.Join(args, " "))
	return out.String()
}

// parseKcat reads `-f '%p\t%o\t%k\t%s\n'` output.
func parseKcat(t *testing.T, out string) []rec {
	t.Helper()
	var got []rec
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "\t", 4)
		require.Len(t, f, 4, "kcat line %q", line)
		p, err := strconv.Atoi(f[0])
		require.NoError(t, err)
		o, err := strconv.ParseInt(f[1], 10, 64)
		require.NoError(t, err)
		got = append(got, rec{Partition: int32(p), Offset: o, Key: []byte(f[2]), Value: []byte(f[3])})
	}
	return got
}

func kcatConsume(t *testing.T, addr, topic string) []rec {
	return parseKcat(t, kcat(t, "", "-C", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-q",
		"-f", "%p\t%o\t%k\t%s\n"))
}

// TestKcat: kcat (librdkafka) produces keyed records with every codec and
// an idempotent producer; each lands on the murmur2 partition, franz-go and
// kcat read them all back; kcat also reads franz-go's compressed batches.
func TestKcat(t *testing.T) {
	interoptest.KcatPath(t)
	eachServer(t, func(t *testing.T, s *interoptest.Server) {
		meta := kcat(t, "", "-L", "-b", s.Addr)
		assert.Contains(t, meta, "broker", "kcat -L lists the broker")
		for i, codec := range codecs {
			if t.Failed() {
				// The other codecs would fail the same way, each after a
				// kcat timeout.
				t.Skipf("skipping codecs after %s: an earlier codec failed", codec)
			}
			t.Run(codec, func(t *testing.T) {
				const partitions = 4
				topic := "kcat-" + codec
				createTopic(t, s.Addr, topic, partitions)
				recs := makeRecords(uint64(300+i), kcatRecords, true)
				var in strings.Builder
				for _, r := range recs {
					fmt.Fprintf(&in, "%s:%s\n", r.Key, r.Value)
				}
				kcat(t, in.String(), "-P", "-b", s.Addr, "-t", topic, "-K", ":", "-z", codec,
					"-X", "topic.partitioner=murmur2_random", "-X", "enable.idempotence=true",
					"-X", "linger.ms=5")
				// kcat does not print offsets: number each partition's records
				// in input order, which must be the log order.
				next := map[int32]int64{}
				for j := range recs {
					p := interoptest.Murmur2Partition(recs[j].Key, partitions)
					recs[j].Partition, recs[j].Offset = p, next[p]
					next[p]++
				}
				assert.Equal(t, partitions, spread(recs))
				checkSame(t, recs, consumeAll(t, s.Addr, topic, len(recs)))
				checkSame(t, recs, kcatConsume(t, s.Addr, topic))

				// The other direction: franz-go's compressed batches through kcat.
				ftopic := "kcat-reads-franz-" + codec
				createTopic(t, s.Addr, ftopic, partitions)
				frecs := makeRecords(uint64(400+i), kcatRecords, true)
				produceFranz(t, s.Addr, ftopic, codec, frecs)
				checkSame(t, frecs, kcatConsume(t, s.Addr, ftopic))
			})
		}
	})
}
