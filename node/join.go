package node

import (
	"context"
	"io"
	"time"

	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/projector"
)

// buildJoin fills an empty views directory from the streams as they stand
// when they hold any message: the replay path into <dir>.new, swapped in
// (projector.ReplayWithResult), which builds in memory and writes the
// store once when the streams fit its limit, and applies them in batches
// otherwise. The projector then continues from the positions the build
// recorded. It is how a node joins by replay, and how one whose snapshot
// join found nothing to restore starts. It reports whether it filled the
// directory; on a failure, or with empty streams (a first start), it
// leaves the directory empty and the projector applies the streams from
// their start as they fill, as it did before builds existed. It blocks
// until the build ends or ctx does. What the build passed over (gaps in
// the streams) is kept for the projector that opens the views (Adopt), as
// a rebuild's is.
func (vs *Views) buildJoin(ctx context.Context) bool {
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	heads, err := bus.Heads(hctx, vs.js)
	cancel()
	if err != nil || heads.State == 0 && heads.Sales == 0 {
		return false
	}
	start := time.Now()
	defer vs.setPhase("")
	res, err := projector.ReplayWithResult(ctx, vs.js, vs.data, projector.ReplayOptions{
		Projector: vs.popts, Store: vs.sopts, Log: vs.log, ProgressEvery: time.Hour, OnPhase: vs.setPhase, OnProgress: vs.progress.set,
	}, io.Discard)
	if err != nil {
		vs.log.Warn().Err(err).Msg("building the views from the streams failed: applying them from their start instead")
		return false
	}
	vs.joinGaps = res.Gaps
	vs.log.Info().Int("messages", res.Messages).Bool("in_memory", res.Bulk).Int64("took_ms", time.Since(start).Milliseconds()).
		Msg("views built from the streams; applying what follows")
	return true
}
