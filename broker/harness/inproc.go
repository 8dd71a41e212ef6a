package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/minikafka/minikafka/broker"
)

// InProcess is a broker served by this process on loopback listeners:
// what a test of the broker's own code needs without a child process
// (broker/brokertest wraps it for tests). Its addresses stay the same
// across Close and Serve again, as a process restart keeps its ports.
type InProcess struct {
	// Server is nil while the broker is closed.
	*broker.Server
	// Config is what the broker serves with; Addr and CtlAddr (its
	// controller listener, "" when it is no controller voter) its
	// listeners' addresses.
	Config        broker.Config
	Addr, CtlAddr string

	done     chan struct{}
	serveErr error
}

// ServeInProcess starts a broker of cfg on ln, and on ctl (nil for a
// broker that is no controller voter) for the controller quorum, and
// returns once it serves; WaitReady says when it is registered and
// unfenced. An empty cfg.AdvertisedAddr advertises ln's address. On an
// error the listeners are closed.
func ServeInProcess(cfg broker.Config, ln, ctl net.Listener) (*InProcess, error) {
	if cfg.AdvertisedAddr == "" {
		cfg.AdvertisedAddr = ln.Addr().String()
	}
	b := &InProcess{Config: cfg, Addr: ln.Addr().String()}
	if ctl != nil {
		b.CtlAddr = ctl.Addr().String()
	}
	return b, b.serve(ln, ctl)
}

func (b *InProcess) serve(ln, ctl net.Listener) error {
	s, err := broker.New(b.Config)
	if err != nil {
		ln.Close()
		if ctl != nil {
			ctl.Close()
		}
		return fmt.Errorf("harness: broker %d: %w", b.Config.NodeID, err)
	}
	b.Server, b.done = s, make(chan struct{})
	var wg sync.WaitGroup
	var serveErr error
	wg.Go(func() { serveErr = s.Serve(ln) })
	if ctl != nil {
		wg.Go(func() { _ = s.ServeController(ctl) })
	}
	go func() { wg.Wait(); b.serveErr = serveErr; close(b.done) }()
	return nil
}

// Close closes the broker gracefully (a controlled shutdown when it is
// in a cluster) and waits until its listeners are done. Closing a closed
// broker does nothing.
func (b *InProcess) Close() error {
	if b.Server == nil {
		return nil
	}
	err := b.Server.Close()
	<-b.done
	b.Server = nil
	if !errors.Is(b.serveErr, broker.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("harness: Serve returned %v, want broker.ErrServerClosed", b.serveErr))
	}
	return err
}

// Restart serves the closed broker again on its directory and addresses,
// and waits until it is ready.
func (b *InProcess) Restart(ctx context.Context) error {
	if b.Server != nil {
		return fmt.Errorf("harness: broker %d is running", b.Config.NodeID)
	}
	ln, err := net.Listen("tcp", b.Addr)
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	var ctl net.Listener
	if b.CtlAddr != "" {
		if ctl, err = net.Listen("tcp", b.CtlAddr); err != nil {
			ln.Close()
			return fmt.Errorf("harness: %w", err)
		}
	}
	if err := b.serve(ln, ctl); err != nil {
		return err
	}
	return b.WaitReady(ctx)
}

// ListenCluster opens the Kafka and controller listeners of n in-process
// brokers on loopback, and names the first voters of them controller
// voters (ids 1..voters): what each broker's Config.Controllers lists.
func ListenCluster(n, voters int) (lns, ctls []net.Listener, vs []broker.Voter, err error) {
	defer func() {
		if err != nil {
			for _, l := range append(lns, ctls...) {
				l.Close()
			}
		}
	}()
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return lns, ctls, nil, fmt.Errorf("harness: %w", err)
		}
		lns = append(lns, ln)
		ctl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return lns, ctls, nil, fmt.Errorf("harness: %w", err)
		}
		ctls = append(ctls, ctl)
		if i < voters {
			vs = append(vs, broker.Voter{ID: int32(i + 1), Addr: ctl.Addr().String()})
		}
	}
	return lns, ctls, vs, nil
}
