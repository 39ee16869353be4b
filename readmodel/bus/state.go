package bus

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/marketd/marketd/readmodel"
)

// stateReadWait bounds the wait for the next message of a state read: the
// stream holds it already, so a longer silence means the bus is gone.
const stateReadWait = 10 * time.Second

// State reads back what the state stream holds. It implements ingest's
// StateReader: a new ingest process, or one that just took the ingest
// lease, learns what is already published instead of publishing it all
// again.
type State struct{ js jetstream.JetStream }

// NewState returns a State on js.
func NewState(js jetstream.JetStream) *State { return &State{js: js} }

// LastPerSubject calls fn with every message of the state stream, which
// keeps only the last message of each subject (StateStream), decoded, up
// to the stream's head (messages published meanwhile may be included).
// fn is called from several goroutines at once. A message that does not
// decode is passed over and counted in skipped: its subject is then
// unknown to the caller, which publishes it again.
//
// It returns fn's first error, or an UpstreamError *readmodel.Error when
// the stream cannot be read (unreachable, no stream, a silence of
// stateReadWait); fn is not called again once it returns.
func (s *State) LastPerSubject(ctx context.Context, fn func(*readmodel.Message) error) (read, skipped int, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := s.js.Stream(ctx, StateStream)
	if err != nil {
		return 0, 0, translate(err, "state stream")
	}
	if st.CachedInfo().State.Msgs == 0 {
		return 0, 0, nil
	}
	c, err := s.js.OrderedConsumer(ctx, StateStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return 0, 0, translate(err, "read the state stream")
	}
	it, err := c.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		return 0, 0, translate(err, "read the state stream")
	}
	defer it.Stop()

	// Decoding is most of the cost (about 30 µs a message at 100 tokens a
	// bucket), so it runs on every core; the iterator hands out raw data.
	var (
		work    = make(chan []byte, 256)
		wg      sync.WaitGroup
		errOnce sync.Once
		fnErr   error
		bad     atomic.Int64
	)
	fail := func(err error) { errOnce.Do(func() { fnErr = err; cancel() }) }
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for data := range work {
				m, err := Decode(data)
				if err != nil {
					bad.Add(1)
					continue
				}
				if err := fn(m); err != nil {
					fail(err)
				}
			}
		}()
	}
	for {
		m, nerr := it.Next(jetstream.NextMaxWait(stateReadWait))
		if nerr != nil {
			if ctx.Err() == nil {
				if errors.Is(nerr, nats.ErrTimeout) {
					nerr = readmodel.Errorf(readmodel.UpstreamError, "read the state stream: no message for %s", stateReadWait)
				}
				fail(translate(nerr, "read the state stream"))
			}
			break
		}
		read++
		select {
		case work <- m.Data():
		case <-ctx.Done():
		}
		meta, merr := m.Metadata()
		if merr != nil {
			fail(translate(merr, "state message metadata"))
			break
		}
		if meta.NumPending == 0 || ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	if fnErr == nil && ctx.Err() != nil {
		fnErr = translate(ctx.Err(), "read the state stream")
	}
	return read, int(bad.Load()), fnErr
}
