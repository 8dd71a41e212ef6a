package clusterbench

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench"
)

// sample has segment within its targets but for topic creation, pebble
// with a failover median whose interval holds the bound, and badger whose
// cluster never started.
func sample() *Result {
	r := &Result{}
	r.Config.Brokers, r.Config.Sync, r.Config.Kills, r.Config.Topics = 3, "always", 10, 200
	r.Config.Engines, r.Config.ScaleEngines = []string{"segment", "pebble", "badger"}, []string{"segment"}
	r.Config.SessionTimeout = SessionTimeout
	r.Config.ScaleTopics, r.Config.ScalePartitions, r.Config.ScaleRF, r.Config.Restarts = 1000, 10, 1, 3
	for i := range 10 {
		r.add("segment", ControllerFailover, Rep{Seconds: 0.7 + float64(i)*0.01, Node: 1, Attempts: 1})
		r.add("pebble", ControllerFailover, Rep{Seconds: 0.8 + float64(i)*0.05, Node: 2, Attempts: 2})
		r.add("segment", BrokerFailure, Rep{Seconds: 0.02, Node: 2, Moved: 1})
		r.add("pebble", BrokerFailure, Rep{Seconds: 0.03, Node: 3, Moved: 1})
	}
	for i := range 200 {
		r.add("segment", TopicCreation, Rep{Created: 0.04, Listed: 0.045, LeaderAck: 0.05, Seconds: 0.9 + float64(i)/1000})
	}
	r.add("pebble", TopicCreation, Rep{Error: "create created-0000: boom"})
	for _, w := range []string{ControllerFailover, BrokerFailure, TopicCreation} {
		r.add("badger", w, Rep{Error: "start: no such engine"})
	}
	for range 3 {
		r.add("segment", RestartAtScale, Rep{Seconds: 1.5, Listed: 0.3, Shutdown: 7, Partitions: 3333, OpenFiles: 3400, Node: 2})
	}
	r.ScaleSetup = map[string]float64{"segment": 50}
	r.Checks = r.Judge()
	return r
}

func TestJudge(t *testing.T) {
	got := map[string]string{}
	for _, c := range sample().Checks {
		got[strings.Fields(c.Name)[0]+" "+c.Name[strings.LastIndex(c.Name, " ")+1:]] = c.Verdict
	}
	assert.Equal(t, map[string]string{
		"controller segment": bench.Pass, "broker segment": bench.Pass, "topic segment": bench.Fail,
		"controller pebble": bench.Unresolved, "broker pebble": bench.Pass, "topic pebble": bench.Missing,
		"controller badger": bench.Missing, "broker badger": bench.Missing, "topic badger": bench.Missing,
		"restart segment": bench.Pass,
	}, got)
}

func TestReportAndLoad(t *testing.T) {
	r := sample()
	dir := t.TempDir()
	require.NoError(t, r.Write(dir))
	md := string(r.Report(ChartFile))
	for _, want := range []string{"## Targets", "## Controller failover", "## Broker failure", "## Topic creation", "## Restart at scale",
		"## Failed measurements", "badger, controller-failover, rep 1: start: no such engine",
		"shorter than the session timeout", "![Topic creation to served](cluster-topics.png)", "**UNRESOLVED**"} {
		assert.Contains(t, md, want)
	}
	assert.FileExists(t, filepath.Join(dir, ChartFile))
	again, err := Load(filepath.Join(dir, ResultsFile))
	require.NoError(t, err)
	assert.Equal(t, md, string(again.Report(ChartFile)))
	for _, x := range again.Ratios() {
		assert.False(t, x.Gate, "the cluster's ratios are reported only: %s", x.Name)
	}
}

func TestSessionTimeout(t *testing.T) {
	assert.Equal(t, SessionTimeout, sessionTimeout(nil))
	assert.Equal(t, "30s", sessionTimeout([]string{"-broker-session-timeout", "30s"}).String())
	assert.Equal(t, "9s", sessionTimeout([]string{"-x", "1", "--broker-session-timeout=9s"}).String())
}
