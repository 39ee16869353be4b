package projector

import (
	"context"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// A cold start is a node whose store is empty when the projector opens
// and that is not ready until it has projected what it is catching up on:
// a `serve` node joining a tier whose streams hold a market, or
// `marketd all` on a fresh data dir (Options.HoldFirstCycle: ready after
// its first ingest cycle). It serves nobody meanwhile, and a first cycle
// brings every collection's document, stats, analytics, two listing sets,
// tokens and statuses as separate messages, far apart: rendering a
// collection after each of them rendered its views several times. So,
// like a replay build, a cold start holds the collection renders (p.held)
// and renders each collection once, when the cold start ends:
//
//   - at the last message of a full ingest cycle (readmodel.FullCycleEnd:
//     the first cycle of an ingest process on an empty stream is one);
//   - when it has applied what the streams held at Open, if they held
//     anything (a joining node catching up on a tier's streams);
//   - when nothing arrived for Options.ColdIdle while renders are held
//     (an ingest whose first cycle never completes must not leave views
//     unrendered).
//
// Token records, sales and the change feed are written per batch as
// always; only the collection parts (detail, browse, listings, floor)
// wait. A batch that ends the cold start renders them before its position
// counts as applied, so CaughtUp and WaitFor answer only once the views
// are there: a joining node is not ready, and the first cycle of `all`
// not projected, before then.
//
// A crash during a cold start loses the held set, not the inputs: the
// first transaction records a marker (coldJob) and the end removes it
// after rendering. A projector that opens on a store with the marker
// starts cold again and, not knowing what the lost set held, ends by
// re-rendering every collection (the re-render job).

// coldJob is the store.InJob name of the cold-start marker.
const coldJob = "cold-start"

// coldMark is the stored cold-start marker.
type coldMark struct {
	Since time.Time `json:"since"`
}

// cold is the state of a cold start; the zero value is not cold.
type cold struct {
	on     bool // holding renders in p.held
	marked bool // the marker is committed
	lost   bool // opened on a marker: end with a re-render of everything
}

// startCold decides, after load, whether the projector starts cold: the
// store is empty (nothing applied, no collection registered) or carries
// the marker of a cold start that did not end. It holds applyMu.
func (p *Projector) startCold(ctx context.Context) error {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	err := p.st.View(ctx, func(tx *store.Tx) error {
		m, err := store.Get[coldMark](tx, store.InJob, coldJob)
		if err != nil {
			return err
		}
		if m != nil {
			p.cold = cold{on: true, marked: true, lost: true}
			p.held = newPending()
			p.log.Info().Time("since", m.Since).Msg("a cold start did not end; holding renders again, then re-rendering every collection")
			return nil
		}
		if p.pos[iState].Seq != 0 || p.pos[iSales].Seq != 0 {
			return nil
		}
		p.mu.Lock()
		empty := p.target == readmodel.Position{}
		p.mu.Unlock()
		if empty && !p.opts.HoldFirstCycle {
			return nil // ready at once: it renders as it applies
		}
		ids, err := tx.Collections("", 1)
		if err != nil || len(ids) > 0 {
			return err
		}
		p.cold = cold{on: true}
		p.held = newPending()
		return nil
	})
	if err != nil || !p.cold.on || !p.coldCaughtUp() {
		return err
	}
	// A cold start that did not end, on streams it has applied to
	// their heads: nothing more will come to end it.
	return p.endColdLocked(ctx)
}

// markCold records the cold-start marker in tx, the first transaction
// that applies messages during a cold start.
func (p *Projector) markCold(tx *store.Tx) {
	if p.cold.on && !p.cold.marked {
		tx.Put(store.InJob, coldMark{Since: p.opts.Now()}, coldJob)
	}
}

// coldEnds reports whether the batch just applied ends the cold start
// (see the top of this file). Callers hold applyMu.
func (p *Projector) coldEnds(ds []decoded) bool {
	if !p.cold.on {
		return false
	}
	for _, d := range ds {
		if d.fullEnd {
			return true
		}
	}
	return p.coldCaughtUp()
}

// coldCaughtUp reports whether what the streams held at Open, if they
// held anything, is committed. Callers hold applyMu.
func (p *Projector) coldCaughtUp() bool {
	p.mu.Lock()
	t := p.target
	p.mu.Unlock()
	committed := readmodel.Position{State: p.pos[iState].Seq, Sales: p.pos[iSales].Seq}
	return (t.State != 0 || t.Sales != 0) && committed.Covers(t)
}

// endColdLocked ends a cold start: it renders the held collections (or,
// after a lost cold start, queues the re-render of every collection and
// runs it) and removes the marker. Callers hold applyMu.
func (p *Projector) endColdLocked(ctx context.Context) error {
	if !p.cold.on {
		return nil
	}
	held := len(p.held.parts)
	if p.cold.lost {
		if err := p.st.Update(ctx, func(tx *store.Tx) error { tx.Put(store.InJob, job{}, jobName); return nil }); err != nil {
			return err
		}
		if err := p.runJobLocked(ctx); err != nil {
			return err
		}
	} else if err := p.renderHeldLocked(ctx); err != nil {
		return err
	}
	if err := p.st.Update(ctx, func(tx *store.Tx) error { tx.Delete(store.InJob, coldJob); return nil }); err != nil {
		return err
	}
	p.log.Info().Int("collections", held).Bool("all", p.cold.lost).Msg("cold start ended; views rendered")
	p.held, p.cold = nil, cold{}
	return nil
}

// endColdIdle ends a cold start that holds renders when no message of
// either stream was applied for Options.ColdIdle (see the top of this
// file).
func (p *Projector) endColdIdle(ctx context.Context) error {
	if time.Since(time.Unix(0, p.lastApply.Load())) < p.opts.ColdIdle {
		return nil
	}
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if !p.cold.on || (len(p.held.parts) == 0 && !p.cold.lost) {
		return nil
	}
	return p.endColdLocked(ctx)
}
