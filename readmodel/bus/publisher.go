package bus

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/marketd/marketd/readmodel"
)

// maxInFlight bounds unacknowledged async publishes; Publish waits for the
// outstanding acks before going past it.
const maxInFlight = 512

// A publish whose ack failed is sent again with the same Nats-Msg-Id (so
// the stream stores it at most once), with a backoff from retryFirst
// doubling to retryMax, until it is acknowledged, the caller's context
// ends or retryBudget has passed since the Flush began. On a replicated
// stream whose leader's server died, acks fail ("no response from
// stream") until the remaining servers elect a new leader, a few seconds;
// the budget lets the cycle ride that out and complete.
const (
	retryFirst  = 100 * time.Millisecond
	retryMax    = 2 * time.Second
	retryBudget = 60 * time.Second
	retryWait   = 5 * time.Second // one re-sent publish's ack wait
)

// Publisher publishes messages asynchronously with Nats-Msg-Id = msg.ID.
// It implements ingest's Publisher interface. It is safe for concurrent use.
type Publisher struct {
	js      jetstream.JetStream
	mu      sync.Mutex
	pending []pending
	acked   readmodel.Position
	err     error
	retries uint64 // publishes sent again after a failed ack
}

type pending struct {
	fut jetstream.PubAckFuture
	msg *nats.Msg
	buf *bytes.Buffer // msg.Data's buffer, reused once the future resolved
}

// bufs holds encode buffers. A buffer goes back only after its publish
// resolved: until then the client may send msg.Data again (its own
// retries on no responders).
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// NewPublisher returns a Publisher on js.
func NewPublisher(js jetstream.JetStream) *Publisher { return &Publisher{js: js} }

// Publish encodes msg and sends it without waiting for the ack. It fails
// with BadRequest for an invalid message or one larger than the server's
// max payload (keep messages under MaxMessageBytes), and UpstreamError when the
// connection refuses the publish; ack failures surface from Flush.
func (p *Publisher) Publish(ctx context.Context, msg *readmodel.Message) error {
	buf := bufs.Get().(*bytes.Buffer)
	buf, err := wireInto(buf, msg)
	if err != nil {
		bufs.Put(buf)
		return err
	}
	data := buf.Bytes()
	if limit := p.js.Conn().MaxPayload(); limit > 0 && int64(len(data)) > limit-1024 {
		bufs.Put(buf)
		return readmodel.Errorf(readmodel.BadRequest, "message %q: %d bytes exceeds the server's max payload (%d); chunk or trim it", msg.ID, len(data), limit)
	}
	nm := nats.NewMsg(Subject(msg))
	nm.Data = data
	nm.Header.Set(jetstream.MsgIDHeader, msg.ID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) >= maxInFlight {
		p.waitLocked(ctx)
	}
	fut, err := p.js.PublishMsgAsync(nm, jetstream.WithMsgID(msg.ID))
	if err != nil {
		bufs.Put(buf) // the client copied or dropped the data
		return translate(err, "publish")
	}
	p.pending = append(p.pending, pending{fut: fut, msg: nm, buf: buf})
	return nil
}

// Flush waits until every message published so far is acknowledged and
// returns the highest acknowledged sequence per stream (over the
// Publisher's lifetime). A message whose ack failed is re-sent up to a few
// times with the same Nats-Msg-Id; if it still fails, Flush returns an
// UpstreamError (and clears it, so the next Flush reports new failures
// only).
func (p *Publisher) Flush(ctx context.Context) (readmodel.Position, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waitLocked(ctx)
	err := p.err
	p.err = nil
	return p.acked, err
}

func (p *Publisher) waitLocked(ctx context.Context) {
	giveUp := time.Now().Add(retryBudget)
	for _, pd := range p.pending {
		var ack *jetstream.PubAck
		var err error
		resolved := true
		select {
		case ack = <-pd.fut.Ok():
		case err = <-pd.fut.Err():
		case <-ctx.Done():
			err, resolved = ctx.Err(), false
		}
		for backoff := retryFirst; err != nil && ctx.Err() == nil && time.Now().Before(giveUp); backoff = min(2*backoff, retryMax) {
			p.retries++
			rctx, cancel := context.WithTimeout(ctx, retryWait)
			ack, err = p.js.PublishMsg(rctx, pd.msg, jetstream.WithMsgID(pd.msg.Header.Get(jetstream.MsgIDHeader)))
			cancel()
			if err != nil {
				pause(ctx, min(backoff, time.Until(giveUp)))
			}
		}
		if resolved {
			bufs.Put(pd.buf)
		}
		if err != nil {
			if p.err == nil {
				p.err = translate(err, "publish ack")
			}
			continue
		}
		p.note(ack)
	}
	clear(p.pending) // drop the messages and buffers with them
	p.pending = p.pending[:0]
}

func (p *Publisher) note(ack *jetstream.PubAck) {
	switch ack.Stream {
	case StateStream:
		p.acked.State = max(p.acked.State, ack.Sequence)
	case SalesStream:
		p.acked.Sales = max(p.acked.Sales, ack.Sequence)
	}
}

// Retries returns how many publishes were sent again after a failed ack
// (a leader election, a lost server) over the Publisher's lifetime.
func (p *Publisher) Retries() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retries
}

func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
