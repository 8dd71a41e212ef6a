package node

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

func registration(id int32) *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = id, "c", uuid.New()
	return req
}

func TestOpQueueRunsOneOperationAtATime(t *testing.T) {
	store := cluster.NewStore()
	core := cluster.NewControllerCore(cluster.CoreConfig{NodeID: 1, ClusterID: "c", Seed: 1})
	q := NewOpQueue(core, OpQueueConfig{TickInterval: 100 * time.Millisecond})
	active := cluster.Quorum{Active: true, Term: 1}
	var answers []*kmsg.BrokerRegistrationResponse
	for _, id := range []int32{1, 2} {
		q.Submit(q.HandleJob(registration(id), func(resp kmsg.Response, err error) {
			require.NoError(t, err)
			answers = append(answers, resp.(*kmsg.BrokerRegistrationResponse))
		}))
	}
	var offset uint64
	commit := func(payload []byte) {
		offset++
		require.NoError(t, store.Apply(offset, payload))
		q.Outcome(cluster.Outcome{Image: store.Image(), Offset: offset, Now: t0})
	}
	payload, ok := q.Next(active, store.Image(), t0)
	require.True(t, ok, "the new term's barrier first")
	_, ok = q.Next(active, store.Image(), t0)
	require.False(t, ok, "nothing more while a batch is out")
	require.True(t, q.Proposing())
	_, ok = q.Next(active, store.Image(), t0.Add(time.Hour))
	require.False(t, ok, "a batch out is never given up for taking long")
	commit(payload)
	for {
		payload, ok := q.Next(active, store.Image(), t0)
		if !ok {
			break
		}
		commit(payload)
	}
	require.Len(t, answers, 2)
	require.Less(t, answers[0].BrokerEpoch, answers[1].BrokerEpoch, "in submission order, each on the image of the one before")
	require.True(t, q.Idle())

	// A lost batch: the operation answers NOT_CONTROLLER.
	q.Submit(q.HandleJob(registration(3), func(resp kmsg.Response, err error) {
		answers = append(answers, resp.(*kmsg.BrokerRegistrationResponse))
	}))
	_, ok = q.Next(active, store.Image(), t0)
	require.True(t, ok)
	q.Outcome(cluster.Outcome{Image: store.Image(), Lost: cluster.ErrNotController, Now: t0})
	_, ok = q.Next(active, store.Image(), t0)
	require.False(t, ok)
	require.Equal(t, kerr.NotController.Code, answers[2].ErrorCode)

	// A request the controller does not serve.
	var herr error
	q.Submit(q.HandleJob(kmsg.NewPtrMetadataRequest(), func(_ kmsg.Response, err error) { herr = err }))
	q.Next(active, store.Image(), t0)
	require.ErrorIs(t, herr, cluster.ErrUnsupportedRequest)
}

func TestOpQueueTicks(t *testing.T) {
	store := cluster.NewStore()
	core := cluster.NewControllerCore(cluster.CoreConfig{NodeID: 1, ClusterID: "c", Seed: 1})
	q := NewOpQueue(core, OpQueueConfig{TickInterval: 100 * time.Millisecond})
	q.Tick(t0, false)
	require.True(t, q.Idle(), "not the active controller: no tick")
	q.Tick(t0, true)
	require.False(t, q.Idle())
	q.Tick(t0.Add(time.Second), true)
	require.Len(t, q.queue, 1, "one tick queued at a time")
	_, ok := q.Next(cluster.Quorum{Active: true, Term: 1}, store.Image(), t0)
	require.True(t, ok, "the tick's barrier")
	q.Outcome(cluster.Outcome{Image: store.Image(), Lost: cluster.ErrNotController, Now: t0})
	q.Next(cluster.Quorum{}, store.Image(), t0)
	require.True(t, q.Idle())
	q.Tick(t0.Add(50*time.Millisecond), true)
	require.True(t, q.Idle(), "not before the interval")
	q.Tick(t0.Add(100*time.Millisecond), true)
	require.False(t, q.Idle())
}

func TestRouter(t *testing.T) {
	r := NewRouter(2, []int32{1, 2, 3})
	to, ok := r.Target(3)
	require.True(t, ok)
	require.Equal(t, int32(3), to, "the known leader")
	seen := map[int32]bool{}
	for range 4 {
		to, ok := r.Target(-1)
		if ok {
			seen[to] = true
		} else {
			require.Equal(t, int32(2), to, "only this node's own turn says no")
		}
	}
	require.Equal(t, map[int32]bool{1: true, 3: true}, seen, "the voters in turn")
	r.Answered(3, kmsg.NewPtrBrokerHeartbeatResponse(), nil)
	to, _ = r.Target(-1)
	require.Equal(t, int32(3), to, "where the last answer came from")
	nc := kmsg.NewPtrBrokerHeartbeatResponse()
	nc.ErrorCode = kerr.NotController.Code
	r.Answered(3, nc, nil)
	_, known := r.Known()
	require.False(t, known, "NOT_CONTROLLER forgets it")
}

// The config alterations a broker forwards say NOT_CONTROLLER per
// resource: any one of them sends the request to the next voter.
func TestNotControllerOfConfigAlterations(t *testing.T) {
	inc := kmsg.NewPtrIncrementalAlterConfigsResponse()
	inc.Resources = make([]kmsg.IncrementalAlterConfigsResponseResource, 2)
	require.False(t, NotController(inc))
	inc.Resources[1].ErrorCode = kerr.NotController.Code
	require.True(t, NotController(inc))
	old := kmsg.NewPtrAlterConfigsResponse()
	old.Resources = make([]kmsg.AlterConfigsResponseResource, 1)
	require.False(t, NotController(old))
	old.Resources[0].ErrorCode = kerr.NotController.Code
	require.True(t, NotController(old))
}

// The reassignment requests say NOT_CONTROLLER at the top level, and
// AlterPartitionReassignments on each partition too: either sends the
// request to the next voter.
func TestNotControllerOfReassignments(t *testing.T) {
	alter := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	alter.Topics = []kmsg.AlterPartitionAssignmentsResponseTopic{{Partitions: make([]kmsg.AlterPartitionAssignmentsResponseTopicPartition, 2)}}
	require.False(t, NotController(alter))
	alter.Topics[0].Partitions[1].ErrorCode = kerr.NotController.Code
	require.True(t, NotController(alter))
	alter.Topics[0].Partitions[1].ErrorCode, alter.ErrorCode = 0, kerr.NotController.Code
	require.True(t, NotController(alter))
	list := kmsg.NewPtrListPartitionReassignmentsResponse()
	require.False(t, NotController(list))
	list.ErrorCode = kerr.NotController.Code
	require.True(t, NotController(list))
}
