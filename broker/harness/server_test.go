package harness

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMain lets the test binary be a child that listens (childEnv), or
// serve kfake, as a benchmark binary does.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(listen())
	}
	if len(os.Args) > 1 && os.Args[1] == ServeKfakeCmd {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		if err := ServeKfake(ctx, os.Args[2:], os.Stdout, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestKfakeChildServesKafka(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	s, err := Kfake(self, 3, nil)(context.Background(), t.TempDir(), "always")
	require.NoError(t, err)
	defer s.Stop()
	assert.Empty(t, s.MetricsURL)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr()), kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(), "topics are auto-created")
}

func TestBrokerArgs(t *testing.T) {
	args := BrokerArgs("segment", "/d", "a:1", "m:2", "always", 8)
	assert.Contains(t, args, "-engine")
	assert.Equal(t, "segment", args[1])
	assert.Equal(t, []string{"-sync", "always"}, args[10:12])
}

func TestFailing(t *testing.T) {
	boom := errors.New("did not build")
	_, err := Failing(boom)(context.Background(), "", "")
	assert.ErrorIs(t, err, boom)
}

func TestBrokerThatCannotStart(t *testing.T) {
	_, err := Broker("/bin/sh", "x", 1, nil, nil)(context.Background(), t.TempDir(), "always")
	assert.Error(t, err, "sh does not take broker flags and never listens")
}
