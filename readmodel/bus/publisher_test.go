package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

// TestPublishRetriesALostAckAndTheStreamStoresOnce: a message whose ack
// is lost after the server stored it (what a client sees when the ack
// times out, or the server died before its answer left) is sent again
// with the same Nats-Msg-Id; the stream keeps it once, and Flush
// reports the sequence it was stored at. The acks are lost by a seam
// around the real JetStream context: each publish it loses reaches the
// real server and is stored (the seam waits for the server's answer),
// then its future fails as an async publish whose ack timed out.
func TestPublishRetriesALostAckAndTheStreamStoresOnce(t *testing.T) {
	obs := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	state := func(id, coll string) *readmodel.Message {
		return &readmodel.Message{ID: id, Kind: readmodel.KindStats, CollectionID: coll, ObservedAt: obs,
			Stats: &readmodel.CollectionStats{}}
	}
	sale := func(id, coll string) *readmodel.Message {
		return &readmodel.Message{ID: id, Kind: readmodel.KindSales, CollectionID: coll, ObservedAt: obs,
			Sales: []readmodel.SaleRow{{Chain: readmodel.Ethereum, CollectionID: coll, PriceRaw: "5", Marketplace: "NATIVE", Tx: "0x" + id}}}
	}
	cases := []struct {
		name string
		msgs []*readmodel.Message
		lose map[string]bool // ids whose first ack is lost
		want readmodel.Position
	}{
		{"the ack of a state message", []*readmodel.Message{state("s1", "a")}, map[string]bool{"s1": true}, readmodel.Position{State: 1}},
		{"the ack of a sale", []*readmodel.Message{sale("x1", "a")}, map[string]bool{"x1": true}, readmodel.Position{Sales: 1}},
		{"one ack in the middle of a batch", []*readmodel.Message{state("s1", "a"), state("s2", "b"), sale("x1", "a"), state("s3", "c")},
			map[string]bool{"s2": true}, readmodel.Position{State: 3, Sales: 1}},
		{"every ack of a batch on both streams", []*readmodel.Message{state("s1", "a"), sale("x1", "a"), state("s2", "b"), sale("x2", "b")},
			map[string]bool{"s1": true, "x1": true, "s2": true, "x2": true}, readmodel.Position{State: 2, Sales: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
			lossy := &ackLoser{JetStream: js, lose: tc.lose}
			pub := bus.NewPublisher(lossy)
			for _, m := range tc.msgs {
				require.NoError(t, pub.Publish(ctx, m))
			}
			pos, err := pub.Flush(ctx)
			require.NoError(t, err, "a lost ack is retried, not reported")
			assert.Equal(t, tc.want, pos, "the sequences the messages were stored at")
			assert.Equal(t, len(tc.lose), lossy.lost(), "acks lost")
			assert.EqualValues(t, len(tc.lose), pub.Retries(), "one retry per lost ack")

			// Each message is stored once, under its id.
			want := map[string]int{}
			for _, m := range tc.msgs {
				want[m.ID] = 1
			}
			assert.Equal(t, want, storedIDs(t, js), "every message stored once")
		})
	}
}

// storedIDs counts the messages of both streams by Nats-Msg-Id.
func storedIDs(t *testing.T, js jetstream.JetStream) map[string]int {
	t.Helper()
	ctx := context.Background()
	ids := map[string]int{}
	for _, name := range []string{bus.StateStream, bus.SalesStream} {
		s, err := js.Stream(ctx, name)
		require.NoError(t, err)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
			raw, err := s.GetMsg(ctx, seq)
			require.NoError(t, err, "%s seq %d", name, seq)
			ids[raw.Header.Get(jetstream.MsgIDHeader)]++
		}
	}
	return ids
}

// ackLoser is a JetStream context whose asynchronous publishes of the
// ids in lose (the first of each) reach the server, and are stored, but
// whose acks never reach the caller: the future fails as nats.go fails
// one whose ack timed out.
type ackLoser struct {
	jetstream.JetStream
	lose map[string]bool

	mu     sync.Mutex
	nlost  int
	sentTo map[string]bool
}

func (a *ackLoser) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	fut, err := a.JetStream.PublishMsgAsync(m, opts...)
	if err != nil {
		return nil, err
	}
	id := m.Header.Get(jetstream.MsgIDHeader)
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.lose[id] || a.sentTo[id] {
		return fut, nil
	}
	if a.sentTo == nil {
		a.sentTo = map[string]bool{}
	}
	a.sentTo[id] = true
	select { // the server's answer: the message is stored before its ack is lost
	case <-fut.Ok():
	case err := <-fut.Err():
		return nil, fmt.Errorf("publish %s before losing its ack: %w", id, err)
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("publish %s: no answer from the server", id)
	}
	a.nlost++
	return lostAck{m}, nil
}

func (a *ackLoser) lost() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nlost
}

// lostAck is the future of a publish whose ack timed out.
type lostAck struct{ msg *nats.Msg }

func (l lostAck) Ok() <-chan *jetstream.PubAck { return nil }

func (l lostAck) Err() <-chan error {
	ch := make(chan error, 1)
	ch <- jetstream.ErrAsyncPublishTimeout
	return ch
}

func (l lostAck) Msg() *nats.Msg { return l.msg }
