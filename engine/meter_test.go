package engine_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		b    engine.Batch
		max  int
		want error
	}{
		{"ok", engine.Batch{Records: 1, Data: []byte("x")}, 10, nil},
		{"exactly the limit", engine.Batch{Records: 3, Data: make([]byte, 10)}, 10, nil},
		{"no bytes", engine.Batch{Records: 1}, 10, engine.ErrEmptyBatch},
		{"no records", engine.Batch{Records: 0, Data: []byte("x")}, 10, engine.ErrEmptyBatch},
		{"negative records", engine.Batch{Records: -2, Data: []byte("x")}, 10, engine.ErrEmptyBatch},
		{"empty beats too large", engine.Batch{Records: 0, Data: make([]byte, 11)}, 10, engine.ErrEmptyBatch},
		{"one byte over", engine.Batch{Records: 1, Data: make([]byte, 11)}, 10, engine.ErrBatchTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.b.Validate(c.max)
			if c.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, c.want)
		})
	}
	err := engine.Batch{Records: 1, Data: make([]byte, 11)}.Validate(10)
	assert.EqualError(t, err, engine.ErrBatchTooLarge.Error()+": 11 > 10 bytes", "the sizes are in the message")
}

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	events []engine.SyncEvent
}

func (r *recorder) Synced(ev engine.SyncEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) take() []engine.SyncEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func TestSyncMeterNilDoesNothing(t *testing.T) {
	m := engine.NewSyncMeter(engine.Options{})
	require.Nil(t, m, "no Observer, no meter")
	m.Appended(10)
	m.Dropped(1, 10)
	m.Forget()
	m.Begin().End(errors.New("ignored")) // must not panic
}

func TestSyncMeter(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	rec := &recorder{}
	m := engine.NewSyncMeter(engine.Options{Observer: rec, Clock: clk})
	boom := errors.New("boom")

	t.Run("a round reports what was appended before it began", func(t *testing.T) {
		m.Appended(100)
		m.Appended(50)
		r := m.Begin()
		m.Appended(7) // after the snapshot: the next round's
		clk.Advance(3 * time.Millisecond)
		r.End(nil)
		assert.Equal(t, []engine.SyncEvent{{Duration: 3 * time.Millisecond, Batches: 2, Bytes: 150}}, rec.take())
		m.Begin().End(nil)
		assert.Equal(t, []engine.SyncEvent{{Batches: 1, Bytes: 7}}, rec.take())
	})
	t.Run("a round with nothing new is not reported", func(t *testing.T) {
		m.Begin().End(nil)
		assert.Empty(t, rec.take())
	})
	t.Run("overlapping rounds count each append once", func(t *testing.T) {
		m.Appended(1)
		early := m.Begin()
		m.Appended(2)
		late := m.Begin()
		late.End(nil)
		early.End(nil)
		assert.Equal(t, []engine.SyncEvent{{Batches: 2, Bytes: 3}}, rec.take())
	})
	t.Run("a failed round is reported even when it covers nothing new", func(t *testing.T) {
		m.Begin().End(boom)
		assert.Equal(t, []engine.SyncEvent{{Err: boom}}, rec.take())
		m.Appended(4)
		m.Begin().End(boom)
		assert.Equal(t, []engine.SyncEvent{{Batches: 1, Bytes: 4, Err: boom}}, rec.take())
	})
	t.Run("dropped appends are never reported", func(t *testing.T) {
		m.Appended(10)
		m.Appended(20)
		m.Appended(30)
		m.Dropped(2, 50)
		m.Begin().End(nil)
		assert.Equal(t, []engine.SyncEvent{{Batches: 1, Bytes: 10}}, rec.take())
		m.Dropped(5, 500) // more than is unreported: nothing reported is taken back
		m.Appended(8)
		m.Begin().End(nil)
		assert.Equal(t, []engine.SyncEvent{{Batches: 1, Bytes: 8}}, rec.take())
	})
	t.Run("forgotten appends are never reported", func(t *testing.T) {
		m.Appended(10)
		m.Appended(20)
		m.Forget()
		m.Begin().End(nil)
		assert.Empty(t, rec.take())
		m.Appended(5)
		m.Begin().End(nil)
		assert.Equal(t, []engine.SyncEvent{{Batches: 1, Bytes: 5}}, rec.take())
	})
}

func TestObserverFunc(t *testing.T) {
	var got engine.SyncEvent
	var o engine.Observer = engine.ObserverFunc(func(ev engine.SyncEvent) { got = ev })
	o.Synced(engine.SyncEvent{Batches: 3})
	assert.Equal(t, 3, got.Batches)
}
