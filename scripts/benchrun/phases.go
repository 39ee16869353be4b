package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// gcInterval is how often the view store runs its value-log GC by itself
// (readmodel/store's default; marketd has no setting for it and no admin
// endpoint that runs it on demand), and gcQuiet how long the rewrite
// counter must stay unchanged before the harness takes a pass as done.
const (
	gcInterval = time.Minute
	gcQuiet    = 20 * time.Second
)

// faults is n's major page faults so far, or -1.
func faults(n *node) int64 {
	f, err := readMajFaults(n.p.Pid())
	if err != nil {
		return -1
	}
	return f
}

// mixedAndCycles runs the mixed set idle and, at the large size, two more
// cycles with the mixed set running while each is applied; then it waits
// for the store's value-log GC and measures the store.
//
// The node stays pinned to the server core for the mixed runs, idle and
// during cycles alike (the reads' conditions, so the p99s compare): the
// cycle's work and the requests share that core.
func (h *harness) mixedAndCycles(ctx context.Context, n *node, s *SizeRun, demo bool) {
	script, err := h.writeMixedScript(s)
	if err != nil {
		h.note("%s: mixed set: %v", s.Label, err)
		return
	}
	d := mixedDuration(h.o.Wrk.Duration, s.Cycle, demo)
	s.Mixed = append(s.Mixed, h.mixedIdle(ctx, n, s, script, d))
	if demo {
		return
	}
	for i := 2; i <= 3 && ctx.Err() == nil; i++ {
		if left := time.Until(h.deadline); !h.deadline.IsZero() && left < 7*time.Minute {
			h.note("%s: cycle %d (reads during a cycle) skipped: only %s of the run's budget left", s.Label, i, left.Round(time.Second))
			break
		}
		m, load, done := h.mixedDuring(ctx, n, fmt.Sprintf("during cycle %d", i), script, d)
		c := h.cycle(ctx, n, load, done)
		s.MoreCycles = append(s.MoreCycles, c)
		s.Mixed = append(s.Mixed, m)
		h.logf("%s mixed during cycle %d: %.0f rps p50 %s p99 %s; the cycle was applied during %.0f%% of the run", s.Label, i,
			m.Stat.RPS, fmtDur(m.Stat.P50), fmtDur(m.Stat.P99), 100*m.Overlap)
	}
	s.Faults.AfterCycles = faults(n)
	last := time.Now()
	if err := pin(ctx, n.p.Pid(), h.allCores()); err != nil {
		h.note("%s: could not unpin marketd: %v", s.Label, err)
	}
	h.storeAfterGC(ctx, n, s, last)
}

// mixedDuration is how long one mixed run lasts: the wrk duration, and at
// the large size no longer than the first measured cycle (unpinned), so
// that a cycle applied on the pinned core very likely outlasts it; whole
// seconds (wrk's unit), at least 2.
func mixedDuration(wrk time.Duration, first *CycleRun, demo bool) time.Duration {
	d := wrk
	if !demo && first != nil && first.Err == "" && first.Wall > 0 && first.Wall < d {
		d = first.Wall
	}
	return max(d.Truncate(time.Second), 2*time.Second)
}

// gcRewrites reads the store's value-log GC counter; -1 when absent.
func gcRewrites(ctx context.Context, admin string) int64 {
	return counter(ctx, admin, "marketd_views_value_log_gc_rewrites_total")
}

// compactions reads the store's counter of idle compactions (the LSM
// tree merged so that the GC finds every superseded value); -1 when
// absent (before 6455998).
func compactions(ctx context.Context, admin string) int64 {
	return counter(ctx, admin, "marketd_views_compactions_total")
}

func counter(ctx context.Context, admin, name string) int64 {
	v, err := strconv.ParseFloat(metricValue(ctx, admin, name), 64)
	if err != nil {
		return -1
	}
	return int64(v)
}

// storeAfterGC waits for the node's own value-log GC after the last cycle
// (ended at since) and measures the store while the node runs; the figure
// judged is taken after the clean stop (size).
func (h *harness) storeAfterGC(ctx context.Context, n *node, s *SizeRun, since time.Time) {
	st := &StoreRun{Tokens: s.Tokens(), Cycles: len(s.MoreCycles)}
	if s.Cycle != nil {
		st.Cycles++
	}
	s.Store = st
	st.GCRewrites0 = gcRewrites(ctx, n.admin)
	bound := 3 * time.Minute
	if !h.deadline.IsZero() {
		bound = min(bound, time.Until(h.deadline)-6*time.Minute)
	}
	if bound < gcInterval+5*time.Second-time.Since(since) {
		st.GCNote = "not waited for: the run's budget was too short; measured right after the cycles"
		h.note("%s: %s", s.Label, st.GCNote)
	} else {
		h.logf("%s: waiting for the store's periodic value-log GC (every %s; bound %s)", s.Label, gcInterval, bound.Round(time.Second))
		deadline := time.Now().Add(bound)
		last, lastChange := st.GCRewrites0, time.Now()
		// A store that compacts when idle (30 s without a large commit,
		// found by its 15-s GC tick) is waited for too: its compaction's
		// rewrites are the GC pass that counts.
		c0 := compactions(ctx, n.admin)
		for ctx.Err() == nil && time.Now().Before(deadline) {
			compacted := c0 < 0 || compactions(ctx, n.admin) > c0
			if compacted && time.Since(since) >= gcInterval+5*time.Second && time.Since(lastChange) >= gcQuiet {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
			if v := gcRewrites(ctx, n.admin); v != last {
				last, lastChange = v, time.Now()
			}
		}
		st.GCRewrites1 = last
		switch {
		case last < 0:
			st.GCNote = fmt.Sprintf("marketd has no admin endpoint that runs the value-log GC on demand nor a GC counter; waited %s after the last cycle, past one interval of the store's periodic GC (%s)",
				fmtDur(time.Since(since)), gcInterval)
		default:
			st.GCNote = fmt.Sprintf("marketd has no admin endpoint that runs the value-log GC on demand; its store runs it every %s: waited %s after the last cycle, until no file had been rewritten for %s (%d value-log files rewritten since start, %d of them after the last cycle)",
				gcInterval, fmtDur(time.Since(since)), gcQuiet, last, last-st.GCRewrites0)
		}
		if c0 >= 0 {
			st.GCNote += fmt.Sprintf("; the idle store compacted %d time(s) after the last cycle", compactions(ctx, n.admin)-c0)
		}
	}
	st.Waited = time.Since(since)
	st.Live, _ = diskUsage(filepath.Join(s.DataDir, "badger"))
	h.logf("%s: view store live %s apparent, %s on disk (%s)", s.Label, mib(st.Live.Apparent), mib(st.Live.OnDisk), st.GCNote)
}
