package cluster

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestScenarios runs the metadata scenarios of testdata/: commands in, the
// records decided and the state they leave out, reviewed as text. Rewrite
// the expectations with `go test ./cluster -run Scenarios -rewrite`.
//
// Commands (arguments key=value):
//
//	bootstrap cluster=<id>
//	settings min-isr=<n> unclean=<bool> default-rf=<n> [mutate=<name>]  (mutate: testdata/mutations only)
//	register id=<n> [inc=<incarnation, default 1>] [rack=<r>] [disk=<log dir>] [alive] [clean] [durable] [cluster=<id>]
//	unfence id=<n> | fence id=<n> | shutdown id=<n> | rebalance
//	create-topic name=<t> [partitions=<n>] [rf=<n>] [assign=1,2;2,3] [config=k=v,...]
//	add-partitions name=<t> total=<n>
//	delete-topic name=<t>
//	alter-isr topic=<t> p=<n> broker=<n> isr=<ids> [epochs=<ids>] [leader-epoch=<n>] [partition-epoch=<n>]
//	allocate-pids broker=<n>
//	elect topic=<t> p=<n> [unclean]  (ElectLeaders; preferred without unclean)
//	reassign topic=<t> p=<n> (replicas=<ids> | cancel) [no-rf-change]  (AlterPartitionReassignments)
//	complete-reassignments  (the controller tick's sweep)
//	alter-config [topic=<t>] [set=k=v,...] [delete=k,...] [append=k=v] [subtract=k=v] [replace]
//	  (IncrementalAlterConfigs, AlterConfigs with replace; no topic: the cluster-wide broker defaults)
//	state
func TestScenarios(t *testing.T) {
	runScenarios(t, filepath.Join("testdata", "*.txt"))
}

func runScenarios(t *testing.T, glob string) {
	files, err := filepath.Glob(glob)
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			h := &harness{m: Empty(), rnd: rand.New(rand.NewPCG(1, 2))}
			datadriven.RunTest(t, path, h.run)
		})
	}
}

// TestMutations runs the scenarios of testdata/mutations/, each with a
// rule switched off (settings mutate=<name>), in a test binary built with
// the mutations tag, the only build that has the switches. Skipped with
// -short.
func TestMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second test binary")
	}
	out, err := exec.Command("go", "test", "-count=1", "-tags", "mutations", "-run", "^TestMutationScenarios$", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
}

type harness struct {
	m   *Metadata
	s   Settings
	rnd *rand.Rand
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	args := map[string]string{}
	for _, a := range d.CmdArgs {
		args[a.Key] = strings.Join(a.Vals, ",")
	}
	num := func(k string) int64 {
		n, err := strconv.ParseInt(args[k], 10, 64)
		if err != nil {
			d.Fatalf(t, "%s=%q: %v", k, args[k], err)
		}
		return n
	}
	has := func(k string) bool { _, ok := args[k]; return ok }
	s := h.s.WithDefaults()
	var recs []Record
	var err error
	switch d.Cmd {
	case "bootstrap":
		recs = []Record{{Bootstrap: &Bootstrap{ClusterID: args["cluster"]}}}
	case "settings":
		if has("min-isr") {
			h.s.MinInsyncReplicas = int(num("min-isr"))
		}
		if has("default-rf") {
			h.s.DefaultReplicationFactor = int16(num("default-rf"))
		}
		h.s.UncleanLeaderElection = args["unclean"] == "true"
		if has("mutate") {
			if err := mutate(&h.s, args["mutate"]); err != nil {
				d.Fatalf(t, "%v", err)
			}
		}
		return "ok"
	case "register":
		id := int32(num("id"))
		inc := 1
		if has("inc") {
			inc = int(num("inc"))
		}
		cl := h.m.ClusterID()
		if has("cluster") {
			cl = args["cluster"]
		}
		recs, err = s.Register(h.m, cl, RegisterBroker{
			ID: id, Incarnation: incarnation(id, inc), Host: "host" + args["id"], Port: 9092, Rack: args["rack"], LogDir: uuid.NewSHA1(uuid.Nil, []byte(args["disk"])),
			CleanShutdown: has("clean"), DurableAcks: has("durable"),
		}, has("alive"))
	case "unfence":
		recs = s.Unfence(h.m, int32(num("id")))
	case "fence":
		recs = s.Fence(h.m, int32(num("id")))
	case "shutdown":
		recs = s.Shutdown(h.m, int32(num("id")))
	case "rebalance":
		recs = s.Rebalance(h.m)
	case "create-topic":
		nt := NewTopic{Name: args["name"], Partitions: -1, ReplicationFactor: -1, Configs: map[string]*string{}}
		if has("partitions") {
			nt.Partitions = int32(num("partitions"))
		}
		if has("rf") {
			nt.ReplicationFactor = int16(num("rf"))
		}
		if has("assign") {
			for _, p := range strings.Split(args["assign"], ";") {
				nt.Assignment = append(nt.Assignment, ids(p))
			}
		}
		if has("config") {
			for _, kv := range strings.Split(args["config"], ",") {
				k, v, _ := strings.Cut(kv, "=")
				nt.Configs[k] = &v
			}
		}
		var r Record
		if r, err = s.CreateTopic(h.m, nt, h.rnd); err == nil {
			recs = []Record{r}
		}
	case "add-partitions":
		var r Record
		if r, err = s.AddPartitions(h.m, args["name"], int32(num("total")), nil, h.rnd); err == nil {
			recs = []Record{r}
		}
	case "delete-topic":
		var r Record
		if r, err = s.DeleteTopic(h.m, args["name"]); err == nil {
			recs = []Record{r}
		}
	case "alter-isr":
		recs, err = h.alter(args, num)
	case "allocate-pids":
		id := int32(num("broker"))
		b, _ := h.m.Broker(id)
		var r Record
		epoch := int64(-1)
		if b != nil {
			epoch = b.Epoch
		}
		if r, err = s.AllocateProducerIDs(h.m, id, epoch); err == nil {
			recs = []Record{r}
		}
	case "elect":
		typ := ElectPreferred
		if has("unclean") {
			typ = ElectUnclean
		}
		var r Record
		if r, err = s.Elect(h.m, typ, args["topic"], int32(num("p"))); err == nil {
			recs = []Record{r}
		}
	case "alter-config":
		recs, err = s.AlterConfigs(h.m, alteration(args))
	case "reassign":
		var target []int32
		if !has("cancel") {
			target = ids(args["replicas"])
		}
		var r *Record
		if r, err = s.Reassign(h.m, args["topic"], int32(num("p")), target, !has("no-rf-change")); r != nil {
			recs = []Record{*r}
		}
	case "complete-reassignments":
		recs = s.CompleteReassignments(h.m)
	case "state":
		return dump(h.m)
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	var out strings.Builder
	if err != nil {
		fmt.Fprintf(&out, "error: %v\n", err)
	}
	if len(recs) == 0 {
		if err == nil {
			out.WriteString("no change\n")
		}
		return out.String()
	}
	before := h.m
	m, aerr := h.m.Apply(h.m.Offset()+1, recs)
	h.m = m
	for _, r := range recs {
		fmt.Fprintf(&out, "%s\n", describe(before, m, r))
	}
	if aerr != nil {
		fmt.Fprintf(&out, "apply: %v\n", aerr)
	}
	return out.String()
}

func (h *harness) alter(args map[string]string, num func(string) int64) ([]Record, error) {
	t, ok := h.m.Topic(args["topic"])
	if !ok {
		return nil, fmt.Errorf("no topic %q", args["topic"])
	}
	p := t.Partitions[num("p")]
	broker := int32(num("broker"))
	r := AlterISR{Broker: broker, TopicID: t.ID, Partition: int32(num("p")), LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}
	if b, ok := h.m.Broker(broker); ok {
		r.BrokerEpoch = b.Epoch
	}
	if _, ok := args["leader-epoch"]; ok {
		r.LeaderEpoch = int32(num("leader-epoch"))
	}
	if _, ok := args["partition-epoch"]; ok {
		r.PartitionEpoch = int32(num("partition-epoch"))
	}
	var epochs []int32
	if _, ok := args["epochs"]; ok {
		epochs = ids(args["epochs"])
	}
	for i, id := range ids(args["isr"]) {
		e := int64(-1)
		if b, ok := h.m.Broker(id); ok {
			e = b.Epoch
		}
		if i < len(epochs) {
			e = int64(epochs[i])
		}
		r.NewISR = append(r.NewISR, ISRMember{ID: id, Epoch: e})
	}
	rec, _, err := h.s.WithDefaults().AlterPartition(h.m, r)
	if rec == nil {
		return nil, err
	}
	return []Record{*rec}, err
}

func incarnation(id int32, n int) uuid.UUID {
	var u uuid.UUID
	u[0], u[1], u[15] = byte(id>>8), byte(id), byte(n)
	return u
}

func ids(s string) []int32 {
	var out []int32
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil {
			panic(err)
		}
		out = append(out, int32(n))
	}
	return out
}

// describe is one line for a record, naming topics by name.
func describe(before, m *Metadata, r Record) string {
	name := func(id uuid.UUID) string {
		if t, ok := m.TopicByID(id); ok {
			return t.Name
		}
		if t, ok := before.TopicByID(id); ok {
			return t.Name
		}
		return id.String()[:8]
	}
	switch {
	case r.Bootstrap != nil:
		return "bootstrap " + r.Bootstrap.ClusterID
	case r.RegisterBroker != nil:
		return fmt.Sprintf("register broker %d rack=%q", r.RegisterBroker.ID, r.RegisterBroker.Rack)
	case r.FenceBroker != nil:
		return fmt.Sprintf("fence broker %d epoch %d", r.FenceBroker.ID, r.FenceBroker.Epoch)
	case r.UnfenceBroker != nil:
		return fmt.Sprintf("unfence broker %d epoch %d", r.UnfenceBroker.ID, r.UnfenceBroker.Epoch)
	case r.ShutdownBroker != nil:
		return fmt.Sprintf("shutdown broker %d epoch %d", r.ShutdownBroker.ID, r.ShutdownBroker.Epoch)
	case r.CreateTopic != nil:
		var b strings.Builder
		fmt.Fprintf(&b, "create topic %s configs=%v", r.CreateTopic.Name, r.CreateTopic.Configs)
		for i, p := range r.CreateTopic.Partitions {
			fmt.Fprintf(&b, "\n  %d: %s", i, partState(p))
		}
		return b.String()
	case r.AddPartitions != nil:
		var b strings.Builder
		fmt.Fprintf(&b, "add partitions to %s", name(r.AddPartitions.TopicID))
		for _, p := range r.AddPartitions.Partitions {
			fmt.Fprintf(&b, "\n  %s", partState(p))
		}
		return b.String()
	case r.DeleteTopic != nil:
		return "delete topic " + name(r.DeleteTopic.TopicID)
	case r.ChangePartition != nil:
		return fmt.Sprintf("change %s-%d: %s", name(r.ChangePartition.TopicID), r.ChangePartition.Partition, partState(r.ChangePartition.State))
	case r.Config != nil:
		c := r.Config
		what := "cluster-wide"
		if c.ResourceType == ResourceTopic {
			what = "topic " + name(c.TopicID)
		}
		if c.Value == nil {
			return fmt.Sprintf("config %s: delete %s", what, c.Name)
		}
		return fmt.Sprintf("config %s: %s=%s", what, c.Name, *c.Value)
	case r.ProducerIDs != nil:
		return fmt.Sprintf("producer ids [%d, %d) to broker %d", r.ProducerIDs.First, r.ProducerIDs.First+r.ProducerIDs.Count, r.ProducerIDs.Broker)
	case r.Barrier != nil:
		return "barrier"
	}
	return "?"
}

func partState(p Partition) string {
	s := fmt.Sprintf("replicas=%v isr=%v leader=%d leader-epoch=%d partition-epoch=%d", p.Replicas, p.ISR, p.Leader, p.LeaderEpoch, p.PartitionEpoch)
	if len(p.ELR) > 0 {
		s += fmt.Sprintf(" elr=%v", p.ELR)
	}
	if p.Reassigning() {
		s += fmt.Sprintf(" adding=%v removing=%v", p.AddingReplicas, p.RemovingReplicas)
	}
	return s
}

func dump(m *Metadata) string {
	var b strings.Builder
	fmt.Fprintf(&b, "offset %d cluster %q next-producer-id %d\n", m.Offset(), m.ClusterID(), m.NextProducerID())
	for _, br := range m.Brokers() {
		state := "active"
		switch {
		case br.Fenced:
			state = "fenced"
		case br.ShuttingDown:
			state = "shutting-down"
		}
		fmt.Fprintf(&b, "broker %d epoch %d %s rack=%q\n", br.ID, br.Epoch, state, br.Rack)
	}
	if cc := m.ClusterConfigs(); len(cc) > 0 {
		fmt.Fprintf(&b, "cluster-wide configs %v\n", cc)
	}
	for _, t := range m.Topics() {
		if len(t.Configs) > 0 {
			fmt.Fprintf(&b, "%s configs %v\n", t.Name, t.Configs)
		}
		for i, p := range t.Partitions {
			fmt.Fprintf(&b, "%s-%d %s\n", t.Name, i, partState(p))
		}
	}
	return b.String()
}

// alteration reads alter-config's arguments.
func alteration(args map[string]string) ConfigAlteration {
	a := ConfigAlteration{Type: kmsg.ConfigResourceTypeBroker}
	if topic, ok := args["topic"]; ok {
		a.Type, a.Name = kmsg.ConfigResourceTypeTopic, topic
	}
	_, a.Replace = args["replace"]
	for _, op := range []struct {
		arg string
		op  kmsg.IncrementalAlterConfigOp
	}{{"set", kmsg.IncrementalAlterConfigOpSet}, {"append", kmsg.IncrementalAlterConfigOpAppend}, {"subtract", kmsg.IncrementalAlterConfigOpSubtract}} {
		if v, ok := args[op.arg]; ok {
			for _, kv := range strings.Split(v, ",") {
				k, v, _ := strings.Cut(kv, "=")
				a.Ops = append(a.Ops, ConfigOp{Name: k, Op: op.op, Value: &v})
			}
		}
	}
	if v, ok := args["delete"]; ok {
		for _, k := range strings.Split(v, ",") {
			a.Ops = append(a.Ops, ConfigOp{Name: k, Op: kmsg.IncrementalAlterConfigOpDelete})
		}
	}
	return a
}
