package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
)

// peerClients sends requests to other brokers' Kafka listeners, at the
// address the metadata gives each: what a transaction coordinator sends
// partition leaders (WriteTxnMarkers), and a partition leader the
// coordinator (AddPartitionsToTxn to verify, KIP-890). One franz-go client
// per broker, made again when its address changes.
type peerClients struct {
	s *Server

	mu      sync.Mutex
	clients map[int32]peerClient
	closed  bool
}

type peerClient struct {
	addr string
	cl   *kgo.Client
}

// request sends req to broker id, once, within ctx. req must be a fresh
// value for each call (kgo sets its version).
func (p *peerClients) request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	addr, ok := node.LeaderAddr(p.s.store.Image(), id)
	if !ok {
		return nil, fmt.Errorf("broker %d: no address in the metadata", id)
	}
	cl, err := p.client(id, addr)
	if err != nil {
		return nil, err
	}
	return cl.SeedBrokers()[0].Request(ctx, req)
}

func (p *peerClients) client(id int32, addr string) (*kgo.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPeersClosed
	}
	if c, ok := p.clients[id]; ok && c.addr == addr {
		return c.cl, nil
	} else if ok {
		c.cl.Close()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("minikafka-broker-%d", p.s.cfg.NodeID)),
		kgo.DialTimeout(2*time.Second), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	if p.clients == nil {
		p.clients = map[int32]peerClient{}
	}
	p.clients[id] = peerClient{addr, cl}
	return cl, nil
}

var errPeersClosed = errors.New("broker: closing")

func (p *peerClients) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, c := range p.clients {
		c.cl.Close()
	}
	p.clients = nil
}
