package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MixedRun is one wrk run over every measured endpoint in turn (a Lua
// script rotating the paths), on an idle node or while a cycle is
// applied.
type MixedRun struct {
	Label    string // "idle" or "during cycle N"
	During   bool
	Duration time.Duration
	Stat     Stat
	// Overlap is the share of the wrk run during which the cycle was
	// still being applied (1: it outlasted the run); 0 for idle runs.
	Overlap float64
	Err     string
}

// mixedScript is a wrk Lua script that requests paths in turn.
func mixedScript(paths []string) string {
	var b strings.Builder
	b.WriteString("-- written by benchrun: every measured endpoint in turn\nlocal paths = {\n")
	for _, p := range paths {
		fmt.Fprintf(&b, "  %s,\n", strconv.Quote(p))
	}
	b.WriteString("}\nlocal i = 0\nrequest = function()\n  i = i % #paths + 1\n  return wrk.format(\"GET\", paths[i])\nend\n")
	return b.String()
}

// writeMixedScript writes the script of s's endpoints under the run's
// work directory and returns its path.
func (h *harness) writeMixedScript(s *SizeRun) (string, error) {
	var paths []string
	for _, ep := range endpoints(s.Picked) {
		paths = append(paths, ep.Path)
	}
	file := filepath.Join(h.work, "mixed-"+slugify(s.Label)+".lua")
	return file, os.WriteFile(file, []byte(mixedScript(paths)), 0o644)
}

// mixedIdle runs the mixed set for d on an idle node.
func (h *harness) mixedIdle(ctx context.Context, n *node, s *SizeRun, script string, d time.Duration) *MixedRun {
	o := h.o.Wrk
	o.Duration, o.Script = d, script
	m := &MixedRun{Label: "idle", Duration: d}
	st, _, err := runWrk(ctx, o, n.api+"/")
	m.Stat = st
	if err != nil {
		m.Err = err.Error()
	}
	h.logf("%s mixed idle: %.0f rps p50 %s p99 %s", s.Label, st.RPS, fmtDur(st.P50), fmtDur(st.P99))
	return m
}

// mixedDuring returns the load to run while a cycle is applied (see
// harness.cycle) and the run it fills in; cycleEnd is called when the
// cycle's POST has answered, to compute the overlap.
func (h *harness) mixedDuring(ctx context.Context, n *node, label, script string, d time.Duration) (*MixedRun, func(), func(start, cycleEnd time.Time)) {
	o := h.o.Wrk
	o.Duration, o.Script = d, script
	m := &MixedRun{Label: label, During: true, Duration: d}
	var wrkStart, wrkEnd time.Time
	load := func() {
		wrkStart = time.Now()
		st, _, err := runWrk(ctx, o, n.api+"/")
		wrkEnd = time.Now()
		m.Stat = st
		if err != nil {
			m.Err = err.Error()
		}
	}
	done := func(_, cycleEnd time.Time) {
		m.Overlap = overlap(wrkStart, wrkEnd, cycleEnd)
	}
	return m, load, done
}

// overlap is the share of [start, end] before cycleEnd.
func overlap(start, end, cycleEnd time.Time) float64 {
	total := end.Sub(start)
	if total <= 0 {
		return 0
	}
	in := cycleEnd.Sub(start)
	switch {
	case in <= 0:
		return 0
	case in >= total:
		return 1
	}
	return float64(in) / float64(total)
}
