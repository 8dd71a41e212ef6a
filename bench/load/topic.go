package load

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// admin opens a kadm client on c's brokers; close the returned kgo client.
func (c Client) admin() (*kadm.Client, *kgo.Client, error) {
	opts, err := c.options()
	if err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(append(opts, c.Opts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("load: admin client: %w", err)
	}
	return kadm.NewClient(cl), cl, nil
}

// EnsureTopic creates topic with partitions (replication factor: the
// broker's default) unless it exists. An existing topic with another
// partition count is an error: a benchmark must not silently run on a
// different layout.
func EnsureTopic(ctx context.Context, c Client, topic string, partitions int32) error {
	return Kafka{c}.CreateTopic(ctx, topic, partitions, -1)
}

// EndOffsets returns each partition's log end offset: where a consumer that
// must see only records produced from now on starts (ConsumeConfig.From).
func EndOffsets(ctx context.Context, c Client, topic string) (map[int32]int64, error) {
	adm, cl, err := c.admin()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	listed, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("load: end offsets of %s: %w", topic, err)
	}
	if err := listed.Error(); err != nil {
		return nil, fmt.Errorf("load: end offsets of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Topic == topic {
			out[o.Partition] = o.Offset
		}
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("load: end offsets of %s: %w", topic, kerr.UnknownTopicOrPartition)
	}
	return out, nil
}
