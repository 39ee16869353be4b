package node

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/store"
)

// Healing: a damage report starts a rebuild of the views from the
// streams, through the path `marketd replay` takes.

// report says the views are damaged; the loop rebuilds them. Reports
// while a rebuild is under way are dropped.
func (vs *Views) report(reason string, err error) {
	vs.mu.Lock()
	if vs.reason != "" {
		vs.mu.Unlock()
		return
	}
	vs.reason = "views damaged (" + reason + "): rebuilding them from the streams"
	vs.mu.Unlock()
	vs.rebuilds.WithLabelValues(reason).Inc()
	vs.log.Error().Err(err).Str("reason", reason).Str("dir", vs.dir).Msg("view store damaged; not ready, rebuilding the views from the streams")
	select {
	case vs.damage <- struct{}{}:
	default:
	}
}

// Rebuilding is why the views are being rebuilt, "" when they are not.
func (vs *Views) Rebuilding() string {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.reason
}

// loop heals on each damage report. Rebuilds that follow each other
// within healAgainWithin (damage a rebuild cannot cure: a failing disk, a
// store bug) wait longer each time, up to healPauseMax, so the node never
// spends itself rebuilding in a loop.
func (vs *Views) loop(ctx context.Context) {
	var last time.Time
	pause := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-vs.damage:
		}
		if !last.IsZero() && time.Since(last) < healAgainWithin {
			pause = min(max(2*pause, time.Second), healPauseMax)
			vs.log.Warn().Dur("pause", pause).Msg("views damaged again soon after a rebuild; pausing before the next")
			sleepCtx(ctx, pause)
		} else {
			pause = 0
		}
		vs.heal(ctx)
		last = time.Now()
	}
}

// healAgainWithin is how soon after a rebuild another one counts as
// repeated damage (see loop).
const healAgainWithin = 10 * time.Minute

// healPauseMax bounds the pause between failed rebuild attempts.
const healPauseMax = 30 * time.Second

// heal replaces the damaged views with views rebuilt from the streams,
// retrying until it succeeds or ctx ends.
func (vs *Views) heal(ctx context.Context) {
	start := time.Now()
	if old := vs.swapIn(nil); old != nil {
		vs.closeSet(old)
	}
	damagedDir := vs.dir + ".damaged"
	_ = os.RemoveAll(damagedDir)
	if err := os.Rename(vs.dir, damagedDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		vs.log.Warn().Err(err).Msg("could not move the damaged views aside; rebuilding over them")
	}
	pause := time.Second
	for attempt := 1; ctx.Err() == nil; attempt++ {
		set, res, err := vs.rebuild(ctx)
		if err == nil {
			set.proj.Adopt(res.Gaps) // a damaged bus stays said after the rebuild
			// The reason goes first: damage found in the new views (by
			// its verification, say) must not be taken for this round's.
			vs.mu.Lock()
			vs.reason = ""
			vs.mu.Unlock()
			vs.swapIn(set)
			if err := os.RemoveAll(damagedDir); err != nil {
				vs.log.Warn().Err(err).Str("dir", damagedDir).Msg("could not remove the damaged views")
			}
			vs.log.Info().Int("messages", res.Messages).Int64("took_ms", time.Since(start).Milliseconds()).Int("attempts", attempt).Msg("views rebuilt from the streams; serving them")
			return
		}
		if ctx.Err() != nil {
			return
		}
		vs.log.Error().Err(err).Int("attempt", attempt).Dur("retry_in", pause).Msg("rebuilding the views failed; retrying")
		sleepCtx(ctx, pause)
		pause = min(2*pause, healPauseMax)
	}
}

// rebuild runs the replay path into <dir>.new, swaps it in and opens it.
// The views start empty (heal moved the damaged ones aside), so the
// replay builds in memory when the streams are small enough (see
// projector.ReplayOptions.BulkLimit).
func (vs *Views) rebuild(ctx context.Context) (set *viewSet, res projector.ReplayResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = store.Recovered(r, "rebuild views")
		}
	}()
	defer vs.setPhase("")
	res, err = projector.ReplayWithResult(ctx, vs.js, vs.data, projector.ReplayOptions{
		Projector: vs.popts, Store: vs.sopts, Log: vs.log, ProgressEvery: time.Hour, OnPhase: vs.setPhase, OnProgress: vs.progress.set,
	}, io.Discard)
	if err != nil {
		return nil, res, err
	}
	set, err = vs.open(ctx)
	return set, res, err
}

// setPhase shows the rebuild's phase ph in marketd_views_rebuild_phase
// ("": none, which also zeroes the rebuild's progress gauges).
func (vs *Views) setPhase(ph string) {
	for _, p := range projector.Phases {
		v := 0.0
		if p == ph {
			v = 1
		}
		vs.phase.WithLabelValues(p).Set(v)
	}
	if ph == "" {
		vs.progress.set(projector.Progress{})
	}
}

// closeSet closes damaged views, logging what fails.
func (vs *Views) closeSet(set *viewSet) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			vs.log.Warn().Interface("panic", r).Msg("closing the damaged views panicked")
		}
	}()
	if err := set.proj.Close(ctx); err != nil {
		vs.log.Warn().Err(err).Msg("close the damaged views' projector")
	}
	if err := set.closeStore(ctx); err != nil {
		vs.log.Warn().Err(err).Msg("close the damaged views")
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
