package segment_test

import (
	"sync"
	"testing"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/crashtest"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/segment"
)

// inlineDriver is segment opened Inline, as the simulator opens it, with
// the caller's interval flusher that Inline asks for: the suites run it to
// show that the flusher-less mode, so driven, keeps the whole contract.
var inlineDriver = func() engine.Driver {
	d := segment.Driver
	d.Open = func(dir string, opts engine.Options) (engine.LogEngine, error) {
		opts.Inline = true
		e, err := segment.Open(dir, opts)
		if err != nil || opts.Sync != engine.SyncInterval {
			return e, err
		}
		return startIntervalFlusher(e, opts.WithDefaults()), nil
	}
	return d
}()

// intervalFlushed is an Inline engine with the caller's interval flusher.
type intervalFlushed struct {
	*segment.Engine
	quit, done chan struct{}
	stop       sync.Once
}

func startIntervalFlusher(e *segment.Engine, opts engine.Options) *intervalFlushed {
	f := &intervalFlushed{Engine: e, quit: make(chan struct{}), done: make(chan struct{})}
	t := opts.Clock.NewTimer(opts.SyncInterval)
	go func() {
		defer close(f.done)
		defer t.Stop()
		for {
			select {
			case <-f.quit:
				return
			case <-t.C():
				_ = e.Flush() // a failure is sticky: the next Sync or Append reports it
				t.Reset(opts.SyncInterval)
			}
		}
	}()
	return f
}

func (f *intervalFlushed) Close() error {
	f.stop.Do(func() { close(f.quit) })
	<-f.done
	return f.Engine.Close()
}

func TestInlineConformance(t *testing.T) { enginetest.Run(t, inlineDriver) }

func TestInlineCrash(t *testing.T) { crashtest.Run(t, inlineDriver) }
