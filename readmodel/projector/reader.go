package projector

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/store"
)

// The stream reader: how a stream's messages become applied batches, for
// the background loop (consume) and for drain (ApplyAvailable, replay)
// alike. Each fetches a message, gathers what is already buffered behind
// it into a batch, and hands the batch to a reader, which decodes it on
// its own goroutine while the batch before it is applied. The two loops
// differ only in what they do when the stream is idle or fails: the
// background loop waits and recreates its consumer for ever, drain stops
// at a head and gives up on a stream that does not deliver up to it.

// reader applies the batches of stream i in order, decoding one batch
// ahead: while a batch is applied (its views rendered and committed), the
// next one, already fetched, is decoded on another goroutine. Not safe for
// concurrent use: each loop owns one.
type reader struct {
	p        *Projector
	i        int
	ahead    *decodeJob  // the batch decoded ahead, nil when none
	progress func(n int) // called with each applied batch's count (may be nil)
}

// wait is how long to wait for the stream's next message: briefly when a
// batch is decoded and waiting (it is applied unless the next batch is
// already here), else idle.
func (r *reader) wait(idle time.Duration) time.Duration {
	if r.ahead != nil {
		return batchWait
	}
	return idle
}

// pending reports whether a batch is decoded ahead, and the stream
// sequence of its last message.
func (r *reader) pending() (bool, uint64) {
	if r.ahead == nil {
		return false, 0
	}
	return true, r.ahead.last
}

// settle applies the batch decoded ahead, if any, and reports how many
// messages it applied to progress. A panic while applying (Badger on a
// damaged file) is a store damage error.
func (r *reader) settle(ctx context.Context) error {
	if r.ahead == nil {
		return nil
	}
	ds := r.ahead.wait()
	r.ahead = nil
	var n int
	err := r.p.guarded("apply", func() (err error) { n, err = r.p.applyDecoded(ctx, r.i, ds); return err })
	if err == nil && r.progress != nil {
		r.progress(n)
	}
	return err
}

// take gathers the batch that m starts from it, starts decoding it, and
// applies the batch decoded before it. An error gathering (fetchErr) comes
// after that batch was applied; an error applying it (applyErr) drops the
// new batch: a consumer restarted after the applied position delivers it
// again.
func (r *reader) take(ctx context.Context, it jetstream.MessagesContext, m jetstream.Msg) (fetchErr, applyErr error) {
	batch, err := gather(it, m, r.p.opts.MaxBatch)
	if err != nil {
		return err, r.settle(ctx)
	}
	next := r.p.decodeAhead(r.i, batch)
	if err := r.settle(ctx); err != nil {
		next.wait()
		return nil, err
	}
	r.ahead = next
	return nil, nil
}

// close waits for a batch still being decoded, and drops it.
func (r *reader) close() {
	if r.ahead != nil {
		r.ahead.wait()
		r.ahead = nil
	}
}

// Batching: a message that arrives while others are already buffered is
// applied together with them in one transaction (up to Options.MaxBatch messages
// or maxBatchBytes of payload), with the position of the last. That keeps
// the one-transaction guarantee (views and position commit together)
// while a catch-up or replay pays one commit per batch. A batch too large
// for one transaction falls back to one transaction per message.
const (
	maxBatch      = 256
	maxBatchBytes = 2 << 20
	batchWait     = 50 * time.Microsecond
)

type delivered struct {
	seq  uint64
	data []byte
}

// gather returns m and whatever it already holds after it, up to most
// messages or maxBatchBytes of payload (m alone when it is nil).
func gather(it jetstream.MessagesContext, m jetstream.Msg, most int) ([]delivered, error) {
	batch := make([]delivered, 0, 16)
	size := 0
	for m != nil {
		meta, err := m.Metadata()
		if err != nil {
			return nil, readmodel.Wrap(readmodel.UpstreamError, err, "message metadata")
		}
		batch = append(batch, delivered{seq: meta.Sequence.Stream, data: m.Data()})
		size += len(m.Data())
		if len(batch) >= most || size >= maxBatchBytes || it == nil {
			break
		}
		if m, err = it.Next(jetstream.NextMaxWait(batchWait)); err != nil {
			break // nothing buffered (or the iterator failed: the loop sees it next)
		}
	}
	return batch, nil
}

// decoded is a delivered message of a batch, decoded: msg is nil for a
// message that is skipped (undecodable, or on the wrong stream) but still
// advances the position.
type decoded struct {
	msg     *readmodel.Message
	sp      store.StreamPos
	bad     bool // undecodable
	fullEnd bool // the last message of a full ingest cycle (readmodel.FullCycleEnd)
}

// decodeBatch decodes the messages of a batch of stream i. It touches no
// projector state, so it can run while another batch is applied.
func (p *Projector) decodeBatch(i int, batch []delivered) []decoded {
	ds := make([]decoded, len(batch))
	for k, d := range batch {
		msg, derr := bus.Decode(d.data)
		ds[k].sp = store.StreamPos{Seq: d.seq}
		if derr != nil {
			p.log.Warn().Err(derr).Str("stream", streamNames[i]).Uint64("seq", d.seq).Msg("skipping undecodable message")
			ds[k].bad = true
			continue
		}
		ds[k].sp.ID = msg.ID
		ds[k].fullEnd = i == iState && readmodel.IsFullCycleEnd(msg.ID)
		if (i == iSales) != (msg.Kind == readmodel.KindSales) {
			p.log.Warn().Str("stream", streamNames[i]).Uint64("seq", d.seq).Str("kind", string(msg.Kind)).Msg("skipping message of the wrong stream")
			continue
		}
		ds[k].msg = msg
	}
	return ds
}

// decodeJob is a batch being decoded on its own goroutine.
type decodeJob struct {
	done chan struct{}
	last uint64 // stream sequence of the batch's last message
	ds   []decoded
}

// decodeAhead starts decoding batch (of stream i) on a new goroutine.
func (p *Projector) decodeAhead(i int, batch []delivered) *decodeJob {
	j := &decodeJob{done: make(chan struct{}), last: batch[len(batch)-1].seq}
	go func() {
		defer close(j.done)
		j.ds = p.decodeBatch(i, batch)
	}()
	return j
}

// wait returns the decoded batch once decoding is done.
func (j *decodeJob) wait() []decoded {
	<-j.done
	return j.ds
}
