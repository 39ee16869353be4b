package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
)

// stateStream is an ingest.StateReader over what the test hands it: the
// last message of each state subject, after a JSON round trip, as the bus
// keeps and decodes them. Sales go to the other stream and are left out.
type stateStream struct {
	mu      sync.Mutex
	last    map[string]*readmodel.Message
	garbage int   // this many more messages that do not decode
	err     error // LastPerSubject fails with it
	reads   int
	// during, when set, runs inside LastPerSubject (a cycle cancelled
	// while reading); LastPerSubject then fails with ctx's error.
	during func()
	// marks are the polls' resume points SaveMarks stored; marksErr
	// fails both LoadMarks and SaveMarks.
	marks    map[string]string
	marksErr error
}

func (s *stateStream) add(msgs ...*readmodel.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[string]*readmodel.Message{}
	}
	for _, m := range msgs {
		if m.Kind != readmodel.KindSales {
			s.last[stateKey(m)] = m
		}
	}
}

// LoadMarks and SaveMarks make stateStream an ingest.MarkStore.
func (s *stateStream) LoadMarks(context.Context) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.marksErr != nil {
		return nil, s.marksErr
	}
	return maps.Clone(s.marks), nil
}

func (s *stateStream) SaveMarks(_ context.Context, marks map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.marksErr != nil {
		return s.marksErr
	}
	s.marks = maps.Clone(marks)
	return nil
}

func stateKey(m *readmodel.Message) string {
	return fmt.Sprintf("%s/%s/%s/%d", m.Kind, m.Source, m.CollectionID, m.Bucket)
}

func (s *stateStream) LastPerSubject(ctx context.Context, fn func(*readmodel.Message) error) (int, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.during != nil {
		s.during()
		return 0, 0, ctx.Err()
	}
	if s.err != nil {
		return 0, 0, s.err
	}
	for _, m := range s.last {
		b, err := json.Marshal(m)
		if err != nil {
			return 0, 0, err
		}
		var d readmodel.Message
		if err := json.Unmarshal(b, &d); err != nil {
			return 0, 0, err
		}
		if err := fn(&d); err != nil {
			return 0, 0, err
		}
	}
	return len(s.last) + s.garbage, s.garbage, nil
}

// market is a simulator and a clock several ingest processes share.
type market struct {
	sim *sim.Sim
	url string
	mu  sync.Mutex
	now time.Time
}

func mustMarket(t *testing.T) *market {
	t.Helper()
	s, url := mustSimServer(t, nil)
	return &market{sim: s, url: url, now: anchor.Add(10 * time.Second)}
}

// clock moves a millisecond each time it is read, as a cycle's pages
// come in over time.
func (m *market) clock() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(time.Millisecond)
	return m.now
}

// step moves the market and the clock one poll interval on.
func (m *market) step() {
	m.sim.Tick()
	m.mu.Lock()
	m.now = m.now.Add(2 * time.Minute)
	m.mu.Unlock()
}

// fault sets a source's fault mode in the simulator.
func (m *market) fault(t *testing.T, src readmodel.Source, mode string) {
	t.Helper()
	(&env{url: m.url}).fault(t, src, mode)
}

// process is a new ingest process on m: nothing remembered.
func (m *market) process(t *testing.T, state ingest.StateReader, lease ingest.Lease) (*ingest.Ingest, *fakePub) {
	t.Helper()
	pub := &fakePub{}
	cfg := ingest.Config{Sources: map[readmodel.Source]ingest.SourceConfig{}, Now: m.clock, PageLimit: 300, Lease: lease}
	if state != nil {
		cfg.State = state
		if ms, ok := state.(ingest.MarkStore); ok {
			cfg.Marks = ms
		}
	}
	for _, src := range readmodel.Sources {
		cfg.Sources[src] = ingest.SourceConfig{BaseURL: m.url + "/" + string(src), Timeout: 30 * time.Second}
	}
	// The order book's timeout fault holds a request until the client
	// gives up.
	cfg.Sources[readmodel.SourceOrderBook] = ingest.SourceConfig{BaseURL: m.url + "/order-book", Timeout: 3 * time.Second}
	in, err := ingest.New(cfg, pub, zerolog.Nop())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, in.Close(context.Background())) })
	return in, pub
}

// cycle runs one cycle of in, hands what it published to the state
// stream, and returns the summary and the messages (KindPolled aside).
func cycle(t *testing.T, in *ingest.Ingest, pub *fakePub, state *stateStream) (ingest.Summary, []*readmodel.Message) {
	t.Helper()
	sum, err := in.RunCycle(context.Background())
	require.NoError(t, err)
	msgs := pub.take()
	state.add(msgs...)
	state.add(pub.takePolled()...)
	return sum, msgs
}

// payloads keys msgs by subject, sales left out: a resumed process does
// not know the sales cursor and offers the upstream's sales again.
func payloads(t *testing.T, msgs []*readmodel.Message) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range msgs {
		if m.Kind == readmodel.KindSales {
			continue
		}
		cp := *m
		// Two processes' cycles start at different times: rows without a
		// time of their own (token overlays among them) carry their
		// cycle's start; compare without it.
		unstamp := func(r *readmodel.ListingRow) {
			if r.Timestamp.Equal(m.ObservedAt) {
				r.Timestamp = time.Time{}
			}
		}
		cp.Listings = append([]readmodel.ListingRow(nil), m.Listings...)
		for i := range cp.Listings {
			unstamp(&cp.Listings[i])
		}
		cp.Tokens = append([]readmodel.TokenDoc(nil), m.Tokens...)
		for i := range cp.Tokens {
			if o := cp.Tokens[i].Overlay; o != nil {
				r := *o
				unstamp(&r)
				cp.Tokens[i].Overlay = &r
			}
		}
		cp.ID, cp.ObservedAt = "", time.Time{}
		b, err := json.Marshal(&cp)
		require.NoError(t, err)
		out[stateKey(m)] = string(b)
	}
	return out
}

// sales returns the sale rows of msgs, in order.
func sales(t *testing.T, msgs []*readmodel.Message) []readmodel.SaleRow {
	t.Helper()
	var out []readmodel.SaleRow
	for _, m := range byKind(msgs, readmodel.KindSales) {
		out = append(out, m.Sales...)
	}
	return out
}

func TestARestartedIngestResumesFromTheBus(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, m *market, state *stateStream)
	}{
		{"an unchanged market publishes nothing, a step what any process would", func(t *testing.T, m *market, state *stateStream) {
			a, apub := m.process(t, state, nil)
			first, msgs := cycle(t, a, apub, state)
			require.True(t, first.Full, "the bus was empty: the first cycle is full")
			require.NotEmpty(t, msgs)

			b, bpub := m.process(t, state, nil) // a's restart
			sum, msgs := cycle(t, b, bpub, state)
			require.NotNil(t, sum.Resumed)
			assert.Empty(t, sum.Resumed.Error)
			assert.Positive(t, sum.Resumed.Subjects)
			assert.False(t, sum.Full, "a resumed cycle is not full")
			assert.Empty(t, payloads(t, msgs), "nothing changed since the bus got it")
			assert.Zero(t, sum.Published-len(byKind(msgs, readmodel.KindSales)), "only the sales it cannot know of")

			// One step of the market: the restarted process publishes
			// exactly what the one that never stopped publishes.
			m.step()
			_, fromA := cycle(t, a, apub, &stateStream{})
			_, fromB := cycle(t, b, bpub, state)
			require.NotEmpty(t, payloads(t, fromA))
			assert.Equal(t, payloads(t, fromA), payloads(t, fromB))
		}},
		{"poll statuses and their times are learnt", func(t *testing.T, m *market, state *stateStream) {
			a, apub := m.process(t, state, nil)
			first, _ := cycle(t, a, apub, state)
			lastGood := first.Start
			m.step()
			m.fault(t, readmodel.SourceOrderBook, "error")
			_, msgs := cycle(t, a, apub, state)
			require.NotEmpty(t, byKind(msgs, readmodel.KindStatus), "order-book failing")

			b, bpub := m.process(t, state, nil)
			m.step()
			_, msgs = cycle(t, b, bpub, state)
			assert.Empty(t, byKind(msgs, readmodel.KindStatus), "still failing the same way: no status again")

			m.fault(t, readmodel.SourceOrderBook, "timeout")
			m.step()
			_, msgs = cycle(t, b, bpub, state)
			sts := byKind(msgs, readmodel.KindStatus)
			require.NotEmpty(t, sts, "another error class")
			for _, s := range sts {
				assert.False(t, s.Status.OK)
				assert.True(t, s.Status.LastGoodAt.Equal(lastGood), "last good time kept across the restart: %s", s.Status.LastGoodAt)
			}
		}},
		{"a healthy collection's last good time is its poll's last success, read back", func(t *testing.T, m *market, state *stateStream) {
			a, apub := m.process(t, state, nil)
			first, msgs := cycle(t, a, apub, state)
			for _, s := range byKind(msgs, readmodel.KindStatus) {
				require.Empty(t, s.CollectionID, "healthy collections carry no status")
			}

			b, bpub := m.process(t, state, nil)
			m.step()
			m.fault(t, readmodel.SourceAnalytics, "error")
			_, msgs = cycle(t, b, bpub, state)
			sts := byKind(msgs, readmodel.KindStatus)
			require.NotEmpty(t, sts, "analytics failing")
			for _, s := range sts {
				assert.False(t, s.Status.OK)
				assert.True(t, s.Status.LastGoodAt.Equal(first.Start), "the first cycle's success, learnt from its Polled: %s", s.Status.LastGoodAt)
			}
		}},
		{"the polls resume where the cycle before the last left off", func(t *testing.T, m *market, state *stateStream) {
			a, apub := m.process(t, state, nil)
			first, all := cycle(t, a, apub, state)
			m.step()
			_, last := cycle(t, a, apub, state)
			require.NotEmpty(t, sales(t, last), "the step brought sales")
			require.Len(t, state.marks, 2, "the token watermark and the sales cursor saved")

			b, bpub := m.process(t, state, nil)
			sum, msgs := cycle(t, b, bpub, state)
			assert.Equal(t, 2, sum.Resumed.Marks)
			assert.Equal(t, sales(t, last), sales(t, msgs), "the last cycle's sales offered again, not the %d of the first", len(sales(t, all)))
			assert.Less(t, sum.Sources[source.TokensPoll].RowsAccepted, first.Sources[source.TokensPoll].RowsAccepted, "tokens polled from the watermark")
			assert.Empty(t, payloads(t, msgs))
		}},
		{"marks that cannot be saved or loaded: the cycle completes, the polls start over", func(t *testing.T, m *market, state *stateStream) {
			state.marksErr = errors.New("nats: timeout")
			a, apub := m.process(t, state, nil)
			sum, all := cycle(t, a, apub, state)
			assert.Contains(t, sum.MarksError, "timeout")
			b, bpub := m.process(t, state, nil)
			sum, msgs := cycle(t, b, bpub, state)
			assert.Contains(t, sum.Resumed.MarksError, "timeout")
			assert.Equal(t, sales(t, all), sales(t, msgs), "every sale offered again")
			assert.Empty(t, payloads(t, msgs))
		}},
		{"a store that has no marks (nil): the polls start over", func(t *testing.T, m *market, state *stateStream) {
			a, apub := m.process(t, state, nil)
			_, all := cycle(t, a, apub, state)
			state.marks = nil
			b, bpub := m.process(t, state, nil)
			sum, msgs := cycle(t, b, bpub, state)
			assert.Zero(t, sum.Resumed.Marks)
			assert.Equal(t, sales(t, all), sales(t, msgs), "every sale offered again")
			m.step()
			cycle(t, b, bpub, state) // and it goes on keeping marks
			assert.Len(t, state.marks, 2)
		}},
		{"an empty bus: the first cycle is full", func(t *testing.T, m *market, state *stateStream) {
			b, bpub := m.process(t, state, nil)
			sum, msgs := cycle(t, b, bpub, state)
			require.NotNil(t, sum.Resumed)
			assert.Zero(t, sum.Resumed.Read)
			assert.True(t, sum.Full)
			assert.True(t, readmodel.IsFullCycleEnd(msgs[len(msgs)-1].ID))
		}},
		{"a bus that cannot be read: the cycle is full and says why", func(t *testing.T, m *market, state *stateStream) {
			a, apub := m.process(t, state, nil)
			_, all := cycle(t, a, apub, state)
			state.err = errors.New("nats: no responders")
			reads := state.reads
			b, bpub := m.process(t, state, nil)
			sum, msgs := cycle(t, b, bpub, state)
			require.NotNil(t, sum.Resumed)
			assert.Contains(t, sum.Resumed.Error, "no responders")
			assert.True(t, sum.Full)
			assert.Len(t, msgs, len(all), "everything again")
			state.err = nil
			_, _ = cycle(t, b, bpub, state)
			assert.Equal(t, reads+1, state.reads, "read back once per process, not every cycle")
		}},
		{"a cycle cancelled while reading back: the next one reads again", func(t *testing.T, m *market, state *stateStream) {
			a, apub := m.process(t, state, nil)
			cycle(t, a, apub, state)
			b, bpub := m.process(t, state, nil)
			ctx, cancel := context.WithCancel(context.Background())
			state.during = cancel
			_, err := b.RunCycle(ctx)
			require.Error(t, err)
			state.during = nil
			sum, msgs := cycle(t, b, bpub, state)
			require.NotNil(t, sum.Resumed)
			assert.False(t, sum.Full, "not a full cycle for a read that was cut short")
			assert.Empty(t, payloads(t, msgs))
		}},
		{"garbage on the bus: the cycle is full", func(t *testing.T, m *market, state *stateStream) {
			a, apub := m.process(t, state, nil)
			cycle(t, a, apub, state)
			state.garbage = 1
			b, bpub := m.process(t, state, nil)
			sum, msgs := cycle(t, b, bpub, state)
			assert.Equal(t, 1, sum.Resumed.Skipped)
			assert.True(t, sum.Full, "a damaged stream gets everything again, and the marker")
			assert.True(t, readmodel.IsFullCycleEnd(msgs[len(msgs)-1].ID))
		}},
		{"a new lease term learns what another holder published", func(t *testing.T, m *market, state *stateStream) {
			la, lb := &fakeLease{}, &fakeLease{}
			a, apub := m.process(t, state, la)
			b, bpub := m.process(t, state, lb)
			la.acquire()
			cycle(t, a, apub, state)
			la.held = false
			lb.acquire() // b takes over and publishes a step
			m.step()
			_, msgs := cycle(t, b, bpub, state)
			require.NotEmpty(t, payloads(t, msgs))
			lb.held = false
			la.acquire() // a again: its memory is a step behind the bus
			sum, msgs := cycle(t, a, apub, state)
			require.NotNil(t, sum.Resumed)
			assert.Empty(t, payloads(t, msgs), "nothing changed since b published")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, mustMarket(t), &stateStream{})
		})
	}
}
