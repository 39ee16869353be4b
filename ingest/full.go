package ingest

import (
	"context"

	"github.com/marketd/marketd/readmodel"
)

// A full cycle republishes everything, as the first cycle of a fresh
// process does: no "unchanged, skip" (the content hashes and the raw-rows
// memos are forgotten), every poll status again (with the last good
// times kept), and the incremental polls
// (token watermark, sales cursor) from their start. It heals a state
// stream that lost messages (garbage in its block files, a purge): every
// subject gets its current message back. The sales stream receives every
// sale the upstream still offers again; applying a sale twice is
// idempotent (a sale is keyed by sale), so only the stream grows.
//
// Its last message, after every other, is a repeat of the collection
// index's source-wide status whose ID ends in readmodel.FullCycleEnd: a
// projector that passed over lost messages knows its views are whole
// again once it applied it.

// RunFullCycle is RunCycle republishing everything (POST
// /admin/ingest?full=true). A full cycle that fails leaves the next cycle
// that polls every source full as well.
func (in *Ingest) RunFullCycle(ctx context.Context) (Summary, error) {
	if err := in.leaseGate(); err != nil {
		return Summary{}, err
	}
	in.cycleMu.Lock()
	in.full = true
	in.cycleMu.Unlock()
	sum, err := in.run(ctx, allSources())
	in.done(ctx, "request-full", sum, err)
	return sum, err
}

// beginFull makes c a full cycle when one is due and c polls every
// source: it forgets what the last cycles published. Called with cycleMu
// held.
func (in *Ingest) beginFull(c *cycle, set map[readmodel.Source]bool) {
	if !in.full {
		return
	}
	for _, s := range readmodel.Sources {
		if !set[s] {
			return
		}
	}
	clear(in.hashes) // the poll statuses are kept (their last good times) but sent again: setStatus
	clear(in.listMemos)
	clear(in.marks)
	c.sum.Full = true
}

// endFull publishes a full cycle's last message (see readmodel.FullCycleEnd).
func (c *cycle) endFull(ctx context.Context) error {
	if !c.sum.Full {
		return nil
	}
	sk := statusKey(readmodel.SourceCollectionIndex, "")
	st, ok := c.status[sk]
	if !ok {
		c.sum.Full = false // the index was not polled: not full after all
		return nil
	}
	msg := &readmodel.Message{Kind: readmodel.KindStatus, Source: readmodel.SourceCollectionIndex, Status: st.pollStatus()}
	msg.ID = c.ns + "/" + string(msg.Kind) + "/" + string(msg.Source) + "//0" + readmodel.FullCycleEnd
	msg.ObservedAt = c.start
	c.pubMu.Lock()
	err := c.in.pub.Publish(ctx, msg)
	c.pubMu.Unlock()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.src(string(readmodel.SourceCollectionIndex)).Published++
	c.sum.Published++
	c.mu.Unlock()
	return nil
}
