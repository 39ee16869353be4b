package bus

import (
	"context"
	"encoding/json"
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

// MarksBucket is the JetStream key-value bucket in which ingest keeps its
// polls' resume points (the token watermark, the sales cursor; MarksKey).
//
// WARNING: renaming it makes the next ingest process poll every token and
// offer every sale the upstream has again, once.
const MarksBucket = "MARKETD_INGEST"

// MarksKey is the key of the polls' resume points in MarksBucket.
const MarksKey = "marks"

// State is what ingest keeps on the bus beyond its messages: it reads
// back the state stream and keeps the polls' resume points. It implements
// ingest's StateReader and MarkStore, so that a new ingest process, or one
// that just took the ingest lease, learns what is already published
// instead of publishing it all again. It is safe for concurrent use.
type State struct {
	js       jetstream.JetStream
	replicas int

	mu sync.Mutex
	kv jetstream.KeyValue // MarksBucket, once opened
}

// NewState returns a State on js whose marks bucket, created on first
// use, has replicas replicas (the streams' count).
func NewState(js jetstream.JetStream, replicas int) *State {
	return &State{js: js, replicas: max(replicas, 1)}
}

// marks opens (creating it if needed) MarksBucket.
func (s *State) marks(ctx context.Context) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv != nil {
		return s.kv, nil
	}
	kv, err := s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      MarksBucket,
		Description: "marketd ingest: the polls' resume points",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    s.replicas,
	})
	if err != nil {
		return nil, translate(err, "marks bucket")
	}
	s.kv = kv
	return kv, nil
}

// LoadMarks returns the resume points SaveMarks last stored, empty when
// there are none. Errors are UpstreamError *readmodel.Error values.
func (s *State) LoadMarks(ctx context.Context) (map[string]string, error) {
	kv, err := s.marks(ctx)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, MarksKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, translate(err, "load marks")
	}
	marks := map[string]string{}
	if err := json.Unmarshal(e.Value(), &marks); err != nil {
		return nil, readmodel.Wrap(readmodel.UpstreamError, err, "load marks: not a JSON object")
	}
	return marks, nil // nil for a stored "null": the ingest copies what it gets into a map of its own
}

// SaveMarks stores marks in place of the previous ones. Errors are
// UpstreamError *readmodel.Error values.
func (s *State) SaveMarks(ctx context.Context, marks map[string]string) error {
	kv, err := s.marks(ctx)
	if err != nil {
		return err
	}
	b, err := json.Marshal(marks)
	if err != nil {
		return readmodel.Wrap(readmodel.Internal, err, "save marks")
	}
	if _, err := kv.Put(ctx, MarksKey, b); err != nil {
		return translate(err, "save marks")
	}
	return nil
}

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
