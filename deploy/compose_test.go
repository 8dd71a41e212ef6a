package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka/broker/harness/netlab"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// composePorts are the host ports deploy/compose's brokers listen on.
var composePorts = []int{9092, 9093, 9094, 9192, 9193, 9194, 9101, 9102, 9103}

// docker skips the test unless a Docker engine answers and a compose
// command exists; it returns the compose command line.
func docker(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker command: the image and compose tests need a Docker engine")
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers: %v: %s", err, bytes.TrimSpace(out))
	}
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	t.Skip("neither docker compose (the plugin) nor docker-compose is installed")
	return nil
}

// TestCompose builds the image with deploy/image.sh, starts the README's
// compose cluster, and serves kcat from the host: three brokers listed, a
// topic produced with acks=all through one broker and read back through
// another, created with the cluster's defaults (RF 3, min.insync.replicas
// 2); a broker stopped by compose (SIGTERM) exits 0.
func TestCompose(t *testing.T) {
	compose := docker(t)
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (.ci/run installs it)")
	}
	release, err := netlab.Exclusive() // not beside a lab of real hosts
	require.NoError(t, err)
	defer release()
	for _, p := range composePorts {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Skipf("port %d, which the compose cluster uses, is taken: %v", p, err)
		}
		ln.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tag := fmt.Sprintf("minikafka:test-%d", os.Getpid())
	run(t, ctx, nil, "./image.sh", tag)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })

	project := fmt.Sprintf("mktest%d", os.Getpid())
	env := []string{"MINIKAFKA_IMAGE=" + tag}
	up := append(compose, "-p", project, "-f", "compose/docker-compose.yml")
	t.Cleanup(func() {
		down := exec.Command(up[0], append(up[1:], "down", "-v", "-t", "30")...)
		down.Env = append(os.Environ(), env...)
		if out, err := down.CombinedOutput(); err != nil {
			t.Logf("compose down: %v: %s", err, out)
		}
	})
	run(t, ctx, env, up[0], append(up[1:], "up", "-d")...)

	cl, err := kgo.NewClient(kgo.SeedBrokers("localhost:9092"))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var last string
	if !assert.Eventually(t, func() bool {
		// A new client each time, as `kcat -L` is: the long-lived client
		// once answered every poll for two minutes with the broker list
		// of its first metadata (one broker, the others not yet unfenced)
		// while every broker, asked by a new client, listed all three.
		brokers, err := brokerMetadata(ctx, "localhost:9092")
		last = fmt.Sprintf("brokers %v, err %v", brokers, err)
		return err == nil && len(brokers) == 3
	}, 2*time.Minute, 100*time.Millisecond, "the compose cluster lists three brokers") {
		t.Logf("the last metadata: %s", last)
		composeFailure(t, project, up, env)
	}

	prod := exec.CommandContext(ctx, kcat, "-b", "localhost:9092", "-P", "-t", "demo", "-K:", "-X", "acks=all")
	prod.Stdin = strings.NewReader("k1:hello\nk2:world\n")
	out, err := prod.CombinedOutput()
	require.NoError(t, err, "kcat produce: %s", out)
	out, err = exec.CommandContext(ctx, kcat, "-b", "localhost:9093", "-C", "-t", "demo", "-e", "-q", "-f", "%k:%s\n").Output()
	require.NoError(t, err, "kcat consume")
	assert.ElementsMatch(t, []string{"k1:hello", "k2:world"}, strings.Fields(string(out)))

	td, err := adm.ListTopics(ctx, "demo")
	require.NoError(t, err)
	for _, p := range td["demo"].Partitions {
		assert.Len(t, p.Replicas, 3, "partition %d: the default replication factor", p.Partition)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "demo")
	require.NoError(t, err)
	cfg, err := rc.On("demo", nil)
	require.NoError(t, err)
	for _, c := range cfg.Configs {
		if c.Key == "min.insync.replicas" {
			assert.Equal(t, "2", c.MaybeValue(), "the cluster's min.insync.replicas")
		}
	}

	run(t, ctx, env, up[0], append(up[1:], "stop", "broker-2")...)
	code, err := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.State.ExitCode}}", project+"_broker-2_1").Output()
	if err != nil { // the compose plugin names containers project-service-1
		code, err = exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.State.ExitCode}}", project+"-broker-2-1").Output()
	}
	require.NoError(t, err)
	assert.Equal(t, "0", strings.TrimSpace(string(code)), "a broker stopped with SIGTERM exits cleanly")
}

// run runs a command in deploy/ with env added, failing the test with its
// output if it fails.
func run(t *testing.T, ctx context.Context, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), out)
}

// composeFailure fails the test with what tells a stuck cluster apart:
// each broker's own view of the cluster (a broker whose metadata stopped
// moving, against one that never got it), the quorum as the brokers
// describe it, and a goroutine dump of every broker (SIGQUIT), which shows
// a loop that is blocked.
func composeFailure(t *testing.T, project string, up, env []string) {
	t.Helper()
	for _, addr := range []string{"localhost:9092", "localhost:9093", "localhost:9094"} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			var ids []int32
			for _, b := range resp.Brokers {
				ids = append(ids, b.NodeID)
			}
			t.Logf("%s: brokers %v, controller %d", addr, ids, resp.ControllerID)
		} else {
			t.Logf("%s: metadata: %v", addr, err)
		}
		q := kmsg.NewPtrDescribeQuorumRequest()
		qt := kmsg.NewDescribeQuorumRequestTopic()
		qt.Topic = "__cluster_metadata"
		qt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		q.Topics = append(q.Topics, qt)
		if qr, err := q.RequestWith(ctx, cl); err == nil {
			for _, tp := range qr.Topics {
				for _, p := range tp.Partitions {
					t.Logf("%s: quorum leader %d epoch %d high watermark %d voters %+v", addr, p.LeaderID, p.LeaderEpoch, p.HighWatermark, p.CurrentVoters)
				}
			}
		}
		cancel()
		cl.Close()
	}
	ps, _ := exec.Command("docker", "ps", "-a").CombinedOutput()
	for _, id := range strings.Fields(string(must(exec.Command("docker", "ps", "-q", "--filter", "label=com.docker.compose.project="+project).Output()))) {
		_ = exec.Command("docker", "kill", "-s", "QUIT", id).Run()
	}
	time.Sleep(2 * time.Second)
	logs := exec.Command(up[0], append(up[1:], "logs", "--no-color")...)
	logs.Env = append(os.Environ(), env...)
	out, _ := logs.CombinedOutput()
	t.Fatalf("the brokers' logs, then their goroutines:\n%s\n%s", out, ps)
}

func must(b []byte, _ error) []byte { return b }

// brokerMetadata asks seed for the cluster's brokers with a client of its
// own.
func brokerMetadata(ctx context.Context, seed string) (kadm.BrokerDetails, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := kadm.NewClient(cl).BrokerMetadata(short)
	return m.Brokers, err
}
