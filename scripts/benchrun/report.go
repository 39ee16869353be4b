package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Targets of the read path, freshness, a cycle's cost and replay, as
// ratios from the same run.
const (
	targetRPSvsRef   = 0.85
	targetP99vsRef   = 2.0
	targetBigVsDemo  = 0.9
	targetFreshP99   = time.Second
	targetCycleWall  = 2 * time.Minute
	targetCycleCores = 1.0
	// targetReplay bounds replay's wall time by the floor: reading the
	// streams raw plus writing the store it builds with StreamWriter.
	targetReplay = 1.2
)

// Targets of a lean node at ten million tokens (the large size).
const (
	targetAnon        = 1 << 30 // anonymous memory inside the cgroup
	targetPerToken    = 250.0   // bytes of view store per token
	targetStore       = 3_000_000_000
	targetJoin        = 60 * time.Second
	targetReadyLarge  = 180 * time.Second // `marketd all`, empty to ready, 100,000 collections
	targetReadyMedium = 25 * time.Second  // the same at the medium size (10,000)
	targetP99vsDemo   = 2.0
	targetReplayRSS   = 1 << 30
)

// readyTarget is the start-up goal at a size: one for the large market and
// a tighter one for the medium market the large node is iterated on.
func readyTarget(collections int) time.Duration {
	if collections <= 10_000 {
		return targetReadyMedium
	}
	return targetReadyLarge
}

// fmtRatio writes a ratio with two decimals, or three when two would
// round it onto its target (0.846 against 0.85 would read "0.85" beside a
// miss).
func fmtRatio(x, target float64) string {
	if math.Abs(x-target) < 0.005 && x != target {
		return fmt.Sprintf("%.3f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func mib(b int64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**NO**"
}

// verdict is one line of the targets table.
type verdict struct {
	target, measured, met string
}

func renderReport(r *Results) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	o := r.Options
	title := "marketd performance"
	switch {
	case o.Quick:
		title += " (QUICK mode: short runs, not for the README)"
	case o.Medium:
		title += " (MEDIUM: 10,000 collections, 5-s runs: the size to iterate on, not for the README)"
	}
	w("# %s — %s\n\n", title, r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	m := r.Machine
	w("Machine: %s cores (%s), %s memory, kernel %s; %s; %s. Load average at start: %s, at the end: %s (other work on the machine makes numbers noisy).\n\n",
		m["nproc"], m["cpu"], m["memory"], m["kernel"], m["go"], m["wrk"], m["load"], m["loadEnd"])
	w("Method: marketd (`all`: embedded NATS, ingest, projector, API; its seven sources poll `marketd sim` in a process of its own, so marketd's CPU excludes answering them) starts unpinned (start-up, cycles and their CPU use the whole machine), then all its threads are pinned to core %s for the read path (and unpinned again for the freshness cycles), like the reference (`scripts/benchref`: a minimal Fiber app serving the captured marketd body with the same headers); wrk and the harness are pinned to core %s; wrk -t%d -c%d -d%s --latency; a 1 s warm-up of each, then %d run(s) per target, alternating marketd and reference, medians. Rate limits raised to 10⁹ per 60 s via --rate-list/--rate-item; scheduled cycles moved out of the way (--poll-interval 24h), cycles run by POST /admin/ingest. Run took %s (budget %s).\n\n",
		o.ServerCore, o.WrkCore, o.Wrk.Threads, o.Wrk.Connections, o.Wrk.Duration, o.Runs, r.Finished.Sub(r.Started).Round(time.Second), o.Budget)

	vs := verdicts(r)
	w("## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	for _, v := range vs {
		w("| %s | %s | %s |\n", v.target, v.measured, v.met)
	}
	w("\n")

	var demo *SizeRun
	for i, s := range r.Sizes {
		if i == 0 {
			demo = s
			renderDemoTable(&b, s)
		} else {
			renderBigTable(&b, s, demo)
		}
	}
	renderMixed(&b, r)
	renderFreshness(&b, r)
	renderCycle(&b, r)
	renderReplay(&b, r)
	renderJoin(&b, r)
	renderStore(&b, r)
	renderMemory(&b, r)

	w("## go test -bench\n\n")
	if !o.GoBench {
		w("Skipped (BENCH_SKIP_GOBENCH=1).\n\n")
	} else if r.GoBench == "" && r.GoBenchErr == "" {
		w("Not run.\n\n")
	} else {
		w("`go test -count=1 -run '^$' -bench . -benchmem -benchtime %s ./httpapi/... ./readmodel/...` (every core)", o.BenchTime)
		if r.GoBenchErr != "" {
			w(" — exited with: %s", r.GoBenchErr)
		}
		w("\n\n```\n%s\n```\n\n", strings.TrimSpace(r.GoBench))
	}
	if len(r.Notes) > 0 {
		w("## Notes and skipped phases\n\n")
		for _, n := range r.Notes {
			w("- %s\n", n)
		}
		w("\n")
	}
	return b.String()
}

func sizeHeader(b *strings.Builder, s *SizeRun) {
	tokens := "the simulator's default tokens per collection (varied 20–400, about 210 on average)"
	if s.TokensPerCollection > 0 {
		tokens = fmt.Sprintf("%d tokens per collection (%d in all)", s.TokensPerCollection, s.TokensPerCollection*s.Collections)
	}
	fmt.Fprintf(b, "## Read path — %s: %d collections, %s\n\n", s.Label, s.Collections, tokens)
	if s.Picked.Collection.ID != "" {
		quiet := fmt.Sprintf("quiet (below %.2f cores for %d s) %s later", quietCores, quietFor, fmtDur(s.Settled))
		if !s.SettledOK {
			quiet = fmt.Sprintf("**still busy** when reads began, %s later", fmtDur(s.Settled))
		}
		bg := backgroundNote(s.Background)
		if bg != "" {
			bg = " " + bg
		}
		fmt.Fprintf(b, "Collection `%s` (%d items on its listings page at limit=100, %d on its sales page), token `%s`. Ready after %s (first cycle projected), %s. GOMAXPROCS after pinning: %s.%s\n\n",
			s.Picked.Collection.ID, s.Picked.Listings, s.Picked.Sales, s.Picked.TokenPath, fmtDur(s.Ready), quiet, s.GOMAXPROCS, bg)
	}
	if s.Skipped != "" {
		fmt.Fprintf(b, "**Not fully measured:** %s\n\n", s.Skipped)
		if s.Metrics != "" {
			fmt.Fprintf(b, "marketd's own metrics at that moment:\n\n```\n%s\n```\n\n", s.Metrics)
		}
	}
}

// backgroundNote says what marketd did besides answering around the
// reads ("" when not measured).
func backgroundNote(bg *Background) string {
	if bg == nil {
		return ""
	}
	sweep := "the expiry sweep's time is unknown (no marketd_projector_sweep_seconds_total)"
	if bg.Sweep >= 0 {
		sweep = fmt.Sprintf("the expiry sweep ran for %s of them", fmtDur(bg.Sweep))
	}
	return fmt.Sprintf("Besides answering: the reads took %s and %s; in the %s after them, with no load and still pinned, marketd used %.2f of its core.",
		fmtDur(bg.Reads), sweep, fmtDur(bg.Window), bg.Cores)
}

func renderDemoTable(b *strings.Builder, s *SizeRun) {
	sizeHeader(b, s)
	if len(s.Endpoints) == 0 {
		return
	}
	fmt.Fprintf(b, "| endpoint | body bytes | marketd rps | p50 | p99 | reference rps | p50 | p99 | rps ratio | p99 ratio | target met |\n")
	fmt.Fprintf(b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, e := range s.Endpoints {
		mm := e.Marketd.Median
		if e.Ref == nil || len(e.Ref.Runs) == 0 {
			fmt.Fprintf(b, "| %s | %d | %.0f | %s | %s | – | – | – | – | – | %s |\n", e.Name, e.Capture.BodyBytes, mm.RPS, fmtDur(mm.P50), fmtDur(mm.P99), errCell(e))
			continue
		}
		rm := e.Ref.Median
		rr, pr := e.RPSRatio(), ratio(float64(mm.P99), float64(rm.P99))
		met := yes(rr >= targetRPSvsRef && pr <= targetP99vsRef && e.Marketd.OK() && e.Ref.OK())
		if e.Err != "" || !e.Marketd.OK() {
			met += " " + errCell(e)
		}
		fmt.Fprintf(b, "| %s | %d | %.0f | %s | %s | %.0f | %s | %s | %s | %s | %s |\n",
			e.Name, e.Capture.BodyBytes, mm.RPS, fmtDur(mm.P50), fmtDur(mm.P99), rm.RPS, fmtDur(rm.P50), fmtDur(rm.P99),
			fmtRatio(rr, targetRPSvsRef), fmtRatio(pr, targetP99vsRef), met)
	}
	fmt.Fprintf(b, "\nTargets: rps ratio ≥ %.2f and p99 ratio ≤ %.1f (marketd / reference, same run). The rps ratio is the median of the ratios of back-to-back run pairs (marketd, then the reference), the rps columns the medians of each server's runs.\n\n", targetRPSvsRef, targetP99vsRef)
}

func errCell(e *EPResult) string {
	var parts []string
	if e.Err != "" {
		parts = append(parts, strings.ReplaceAll(e.Err, "|", "/"))
	}
	if mm := e.Marketd.Median; mm.Non2xx > 0 || mm.SockErrs > 0 {
		parts = append(parts, fmt.Sprintf("non-2xx %d, socket errors %d", mm.Non2xx, mm.SockErrs))
	}
	if len(parts) == 0 {
		return ""
	}
	s := strings.Join(parts, "; ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return "(" + s + ")"
}

func findEP(s *SizeRun, name string) *EPResult {
	if s == nil {
		return nil
	}
	for _, e := range s.Endpoints {
		if e.Name == name {
			return e
		}
	}
	return nil
}

func renderBigTable(b *strings.Builder, s, demo *SizeRun) {
	sizeHeader(b, s)
	if len(s.Endpoints) == 0 {
		return
	}
	fmt.Fprintf(b, "| endpoint | body bytes | marketd rps | p50 | p99 | demo rps | ratio to demo | demo p99 | p99 ratio to demo | reference rps | p99 | target met (≥ %.2f × demo rps) | target met (p99 ≤ %.0f × demo) |\n", targetBigVsDemo, targetP99vsDemo)
	fmt.Fprintf(b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, e := range s.Endpoints {
		mm := e.Marketd.Median
		d := findEP(demo, e.Name)
		dr, rr, dp, pr := "–", "–", "–", "–"
		met, pmet := "–", "–"
		if d != nil && d.Marketd.Median.RPS > 0 {
			x := ratio(mm.RPS, d.Marketd.Median.RPS)
			dr, rr = fmt.Sprintf("%.0f", d.Marketd.Median.RPS), fmt.Sprintf("%.2f", x)
			met = yes(x >= targetBigVsDemo && e.Marketd.OK())
		}
		if d != nil && d.Marketd.Median.P99 > 0 {
			x := ratio(float64(mm.P99), float64(d.Marketd.Median.P99))
			dp, pr = fmtDur(d.Marketd.Median.P99), fmtRatio(x, targetP99vsDemo)
			pmet = yes(x <= targetP99vsDemo && e.Marketd.OK())
		}
		ref, refp99 := "–", "–"
		if e.Ref != nil && len(e.Ref.Runs) > 0 {
			ref, refp99 = fmt.Sprintf("%.0f", e.Ref.Median.RPS), fmtDur(e.Ref.Median.P99)
		}
		if c := errCell(e); c != "" {
			met += " " + c
		}
		fmt.Fprintf(b, "| %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			e.Name, e.Capture.BodyBytes, mm.RPS, fmtDur(mm.P50), fmtDur(mm.P99), dr, rr, dp, pr, ref, refp99, met, pmet)
	}
	if s.Cgroup != nil && s.Cgroup.Mechanism != "" {
		fmt.Fprintf(b, "\nmarketd ran inside a %s memory cgroup (%s); the demo node ran uncapped.\n", fmtSize(s.Cgroup.Limit), s.Cgroup.Mechanism)
	}
	fmt.Fprintf(b, "\n")
}

func freshStats(r *Results) (first, last, afterPub, returned, returnedAfterPub []time.Duration, observed, withPub int) {
	for _, s := range r.Fresh {
		returned = append(returned, s.Returned)
		if s.HasPublish {
			returnedAfterPub = append(returnedAfterPub, s.Returned-s.Published)
		}
		if !s.Observed {
			continue
		}
		observed++
		first = append(first, s.Served)
		last = append(last, s.LastServed)
		afterPub = append(afterPub, s.AfterPublish())
		if s.HasPublish {
			withPub++
		}
	}
	return
}

func renderFreshness(b *strings.Builder, r *Results) {
	fmt.Fprintf(b, "## Freshness (demo size)\n\n")
	if len(r.Fresh) == 0 {
		fmt.Fprintf(b, "Not measured. %s\n\n", r.FreshErr)
		return
	}
	first, last, afterPub, returned, returnedAfterPub, observed, withPub := freshStats(r)
	watched, changed := 0, 0
	for _, s := range r.Fresh {
		watched, changed = s.Watched, changed+s.Changed
	}
	fmt.Fprintf(b, "Each repetition: `POST /_sim/tick`, then `POST /admin/ingest` (t = 0); meanwhile 4 pollers re-read %d public paths (browse pages in each sort; listings, detail and sales pages of 20 collections) every ~5 ms until each serves a body different from the one before the tick (its next cursor aside: the cursor carries an expiry rounded to the minute; and a listings page that only lost items expiring meanwhile is re-baselined, not counted: that is the clock, not the tick), or 2 s after the ingest answer. %d of %d repetitions observed a change (%.1f changed paths on average). \"Publish end\" is the summary's `end` (after the publisher's flush).\n\n",
		watched, observed, len(r.Fresh), float64(changed)/float64(len(r.Fresh)))
	fmt.Fprintf(b, "| measure | p50 | p99 | max |\n|---|---:|---:|---:|\n")
	row := func(name string, ds []time.Duration) {
		if len(ds) == 0 {
			fmt.Fprintf(b, "| %s | – | – | – |\n", name)
			return
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, fmtDur(percentile(ds, 50)), fmtDur(percentile(ds, 99)), fmtDur(percentile(ds, 100)))
	}
	row("first change served, from ingest start", first)
	row("last change served, from ingest start", last)
	row("ingest answered (cycle published and projected), from ingest start", returned)
	if withPub > 0 {
		row("**last change served after publish end** (target)", afterPub)
		row("ingest answered after publish end", returnedAfterPub)
	} else {
		fmt.Fprintf(b, "| change served after publish end | (summary gives no publish time; the rows above bound it) | | |\n")
	}
	if r.FreshErr != "" {
		fmt.Fprintf(b, "\nStopped early: %s\n", r.FreshErr)
	}
	if r.FreshSummary != "" {
		fmt.Fprintf(b, "\nLast ingest summary: `%s`\n", r.FreshSummary)
	}
	fmt.Fprintf(b, "\n")
}

func renderCycle(b *strings.Builder, r *Results) {
	fmt.Fprintf(b, "## Cycle cost\n\n")
	fmt.Fprintf(b, "| size | phase | wall | marketd CPU | cores used (CPU / wall) | CPU per 2-min interval | simulator CPU |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Sizes {
		if s.Ready > 0 {
			phase := "start-up to ready (first, full cycle)"
			if !s.ReadyOK {
				phase = "start-up, **not ready** when the bound ran out (first cycle unfinished)"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %.2f | %.2f | – |\n", s.Label, phase, fmtDur(s.Ready), fmtDur(s.ReadyCPU),
				ratio(s.ReadyCPU.Seconds(), s.Ready.Seconds()), s.ReadyCPU.Seconds()/targetCycleWall.Seconds())
		}
		if c := s.Cycle; c != nil {
			fmt.Fprintf(b, "| %s | %s, then POST /admin/ingest (%d messages) | %s | %s | %.2f | %.2f | %s |\n", s.Label,
				tickPhrase(c), c.Published, fmtDur(c.Wall), fmtDur(c.CPU),
				ratio(c.CPU.Seconds(), c.Wall.Seconds()), c.CPU.Seconds()/targetCycleWall.Seconds(), fmtDur(c.SimCPU))
		}
		for i, c := range s.MoreCycles {
			fmt.Fprintf(b, "| %s | cycle %d, pinned to the server core, the mixed reads running: %s (%d messages) | %s | %s (reads included) | %.2f | – | %s |\n", s.Label,
				i+2, tickPhrase(c), c.Published, fmtDur(c.Wall), fmtDur(c.CPU), ratio(c.CPU.Seconds(), c.Wall.Seconds()), fmtDur(c.SimCPU))
		}
	}
	fmt.Fprintf(b, "\nmarketd CPU is the whole marketd process: embedded NATS, ingest, projector, API. The simulator answering the polls runs in its own process (its CPU in the last column); a deployment polls real upstreams instead. "+
		"The simulator's market moves only when ticked (a step of %s). At the large size its clock is anchored at start-up plus the ready bound (`--sim-anchor`), "+
		"and the cycle runs when the wall clock gets there, before the reads: one tick, so the cycle sees what one interval of a live market brings, not the listings that expired while the first cycle ran. "+
		"Were the market still behind, the harness would tick it to the wall clock first, and the ticks column says so. "+
		"Target: a full cycle at the large size within %s wall, at most %.0f core on average.\n\n", simStep, targetCycleWall, targetCycleCores)
	for _, s := range r.Sizes {
		if c := s.Cycle; c != nil && (c.Err != "" || c.Summary != "") {
			fmt.Fprintf(b, "%s cycle: %s `%s`\n\n", s.Label, c.Err, c.Summary)
		}
		for i, c := range s.MoreCycles {
			if c.Err != "" {
				fmt.Fprintf(b, "%s cycle %d: %s\n\n", s.Label, i+2, c.Err)
			}
		}
	}
}

// tickPhrase says how far the market moved before c.
func tickPhrase(c *CycleRun) string {
	if l := c.Lag.Round(time.Second); l < 0 {
		return fmt.Sprintf("%d tick(s), the market %s ahead of the wall clock before them", c.Ticks, -l)
	}
	return fmt.Sprintf("%d tick(s), the market %s behind the wall clock before them", c.Ticks, c.Lag.Round(time.Second))
}

func renderReplay(b *strings.Builder, r *Results) {
	fmt.Fprintf(b, "## Replay\n\n")
	if sc := r.SelfConsume; sc != nil {
		for _, x := range sc.Rates {
			fmt.Fprintf(b, "Raw JetStream on this machine (benchconsume --self, 300-byte messages): %s %d msgs at %.0f msgs/s.  \n", x.Op, x.Msgs, x.PerSec)
		}
		fmt.Fprintf(b, "\n")
	} else if r.SelfConsumeErr != "" {
		fmt.Fprintf(b, "Raw JetStream self-test failed: %s\n\n", r.SelfConsumeErr)
	}
	if len(r.Replays) == 0 {
		fmt.Fprintf(b, "Not measured.\n\n")
		return
	}
	fmt.Fprintf(b, "| size | messages | stream bytes | replay wall | replay msgs/s | raw read (best of 2) | StreamWriter write | floor | replay / floor | target met (≤ %.1f) | replay peak RSS |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n", targetReplay)
	for _, x := range r.Replays {
		rt, met := replayVerdict(x)
		if x.Err != "" {
			met += " (" + strings.ReplaceAll(x.Err, "|", "/") + ")"
		}
		rate := fmt.Sprintf("%.0f", x.Rate)
		if x.Partial > 0 {
			rate += fmt.Sprintf(" (cut off after %d messages)", x.Partial)
		}
		write := "–"
		if w := x.Write; w != nil && w.Err != "" {
			write = "failed: " + strings.ReplaceAll(w.Err, "|", "/")
		} else if w != nil {
			write = fmt.Sprintf("%s (%d records, %.0f MB/s)", fmtDur(w.Wall), w.Records, w.MBps)
		}
		ratioCell := "–"
		if x.Floor() > 0 {
			ratioCell = fmtRatio(rt, targetReplay)
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Label, x.Msgs, mib(x.Bytes), fmtDur(x.Wall), rate,
			fmtDur(x.RawWall), write, fmtDur(x.Floor()), ratioCell, met, mib(x.PeakRSS))
	}
	fmt.Fprintf(b, "\nReplay wall time is the whole `marketd replay` process (embedded NATS start on the store, Badger, swap). The floor is what any build of the same store costs at least on this machine, measured in the same run: the raw read is an ordered consumer reading both streams from an embedded server on the same store (consumer creation to last message, the faster of one run before and one after the replay), and the write is `StreamWriter` writing every record of the store the replay built, from memory and sorted, into a fresh store with the node's options (`BenchmarkStreamWriterStore`, mean of two). Stream bytes are the messages' payloads as the raw consumer received them; replay's peak RSS is its rusage maximum.\n\n")
	for _, x := range r.Replays {
		if x.Output != "" {
			fmt.Fprintf(b, "`marketd replay` output, %s (last lines):\n\n```\n%s\n```\n\n", x.Label, x.Output)
		}
	}
}

func renderMemory(b *strings.Builder, r *Results) {
	fmt.Fprintf(b, "## Memory (marketd RSS)\n\n| size | memory cgroup | at ready (or when the start-up bound ran out) | of which anonymous / file-backed | steady (after reads, idle) | peak (VmHWM) | peak anonymous (sampled) | target met (anonymous ≤ %s) |\n|---|---|---:|---:|---:|---:|---:|---|\n", fmtSize(targetAnon))
	for i, s := range r.Sizes {
		met := "–"
		if i > 0 && s.MaxAnon > 0 {
			met = yes(s.MaxAnon <= targetAnon)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s / %s | %s | %s | %s | %s |\n", s.Label, cgroupCell(s.Cgroup), mib(s.MemReady.RSS), mib(s.MemReady.Anon), mib(s.MemReady.File),
			mib(s.MemSteady.RSS), mib(s.PeakRSS), mib(s.MaxAnon), met)
	}
	fmt.Fprintf(b, "\nFile-backed pages are mostly Badger's memory-mapped value log and tables: the kernel reclaims them under memory pressure, but they count in RSS.\n\n")
	for _, s := range r.Sizes {
		renderCgroup(b, s)
	}
}

func cgroupCell(c *CgroupRun) string {
	switch {
	case c == nil:
		return "none"
	case c.Mechanism == "":
		return "none (" + fmtSize(c.Limit) + " asked, not available)"
	default:
		return fmtSize(c.Limit) + ", " + c.Mechanism
	}
}

// faultDelta is b-a, or "–" when either is unknown.
func faultDelta(a, b int64) string {
	if a < 0 || b < 0 {
		return "–"
	}
	return fmt.Sprintf("%d", b-a)
}

// renderCgroup is a size's memory cgroup: how it was made, its usage and
// the major faults of each phase.
func renderCgroup(b *strings.Builder, s *SizeRun) {
	c := s.Cgroup
	if c == nil {
		return
	}
	fmt.Fprintf(b, "### %s: inside a %s memory cgroup\n\n", s.Label, fmtSize(c.Limit))
	if c.Mechanism == "" {
		fmt.Fprintf(b, "**Not measured:** no memory cgroup could be made on this machine, so the node ran uncapped. Why: %s\n\n", c.Why)
		return
	}
	how := map[string]string{
		mechV2:      "a child of the harness's own cgroup on the unified hierarchy, `memory.max` and `memory.swap.max = 0`",
		mechSystemd: "`systemd-run --scope -p MemoryMax=... -p MemorySwapMax=0`",
		mechV1:      "a child of the harness's own group on the v1 memory hierarchy, `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes` where swap is accounted)",
	}[c.Mechanism]
	fmt.Fprintf(b, "Mechanism: %s (%s), `%s`. The whole `marketd all` process ran in it from start-up (embedded NATS included; the simulator answering its polls ran outside). The limit counts anonymous memory and the page cache the process touches (Badger's mapped files, the streams' files).", c.Mechanism, how, c.Dir)
	if c.Why != "" {
		fmt.Fprintf(b, " Not used: %s.", strings.TrimSuffix(c.Why, "."))
	}
	fmt.Fprintf(b, "\n\n")
	fmt.Fprintf(b, "| point | group usage | anonymous | page cache | major faults (group) | OOM kills | times at the limit |\n|---|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, x CgroupStat) {
		if x == (CgroupStat{}) {
			fmt.Fprintf(b, "| %s | – | – | – | – | – | – |\n", name) // not reached (not ready) or not read
			return
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %d | %d |\n", name, mib(x.Usage), mib(x.Anon), mib(x.File), x.MajFaults, x.OOMKills, x.LimitHits)
	}
	row("at ready", c.AtReady)
	row("after the reads", c.AfterReads)
	row("at the end", c.End)
	peak := mib(c.Peak)
	if c.Peak == 0 {
		peak = "not kept by this kernel"
	}
	fmt.Fprintf(b, "\nPeak usage: %s (the group's own mark), %s sampled every 250 ms. ", peak, mib(c.SampledPeak))
	f := s.Faults
	if f.AtReady < 0 {
		fmt.Fprintf(b, "marketd's major page faults (/proc/PID/stat): %s in all (it was not ready).\n\n", faultDelta(0, f.End))
		return
	}
	fmt.Fprintf(b, "marketd's major page faults (/proc/PID/stat): %s during start-up to ready, %s from ready through the first cycle and the reads, %s during the cycles with reads, %s after them.\n\n",
		faultDelta(0, f.AtReady), faultDelta(f.AtReady, f.AfterReads), faultDelta(f.AfterReads, f.AfterCycles), faultDelta(f.AfterCycles, f.End))
}

// renderMixed is the mixed set idle and while a cycle is applied.
func renderMixed(b *strings.Builder, r *Results) {
	var demoIdle *MixedRun
	seen := false
	for i, s := range r.Sizes {
		if len(s.Mixed) > 0 {
			seen = true
			if i == 0 && !s.Mixed[0].During {
				demoIdle = s.Mixed[0]
			}
		}
	}
	fmt.Fprintf(b, "## Reads while a cycle is applied\n\n")
	if !seen {
		fmt.Fprintf(b, "Not measured.\n\n")
		return
	}
	fmt.Fprintf(b, "One wrk run over every endpoint above in turn (a Lua script rotating the paths; same connections and pinning as the read tables), on the idle node and, at the large size, started right after `POST /_sim/tick` and `POST /admin/ingest` of cycles 2 and 3, marketd staying pinned to its core, so that the cycle's work and the requests share it. At the large size a run lasts no longer than the first cycle took unpinned, so that the cycle outlasts it; the last column says how much of the run the cycle covered.\n\n")
	fmt.Fprintf(b, "| size | run | duration | rps | p50 | p99 | p99 / idle p99 (same size) | p99 / demo idle p99 | target met (≤ %.0f × demo) | cycle applied during |\n|---|---|---:|---:|---:|---:|---:|---:|---|---:|\n", targetP99vsDemo)
	for _, s := range r.Sizes {
		var idle *MixedRun
		for _, m := range s.Mixed {
			if !m.During {
				idle = m
			}
		}
		for _, m := range s.Mixed {
			toIdle, toDemo, met, cov := "–", "–", "–", "–"
			if idle != nil && idle.Stat.P99 > 0 && m != idle {
				toIdle = fmtRatio(ratio(float64(m.Stat.P99), float64(idle.Stat.P99)), targetP99vsDemo)
			}
			if demoIdle != nil && demoIdle.Stat.P99 > 0 && m != demoIdle {
				x := ratio(float64(m.Stat.P99), float64(demoIdle.Stat.P99))
				toDemo, met = fmtRatio(x, targetP99vsDemo), yes(x <= targetP99vsDemo && m.ok())
			}
			if m.During {
				cov = fmt.Sprintf("%.0f%%", 100*m.Overlap)
			}
			if e := m.errText(); e != "" {
				met += " (" + e + ")"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %s |\n", s.Label, m.Label, fmtDur(m.Duration), m.Stat.RPS,
				fmtDur(m.Stat.P50), fmtDur(m.Stat.P99), toIdle, toDemo, met, cov)
		}
	}
	fmt.Fprintf(b, "\n")
}

// ok reports whether the run completed with no failed response.
func (m *MixedRun) ok() bool {
	return m.Err == "" && m.Stat.Requests > 0 && m.Stat.Non2xx == 0 && m.Stat.SockErrs == 0
}

func (m *MixedRun) errText() string {
	var parts []string
	if m.Err != "" {
		parts = append(parts, strings.ReplaceAll(m.Err, "|", "/"))
	}
	if m.Stat.Non2xx > 0 || m.Stat.SockErrs > 0 {
		parts = append(parts, fmt.Sprintf("non-2xx %d, socket errors %d", m.Stat.Non2xx, m.Stat.SockErrs))
	}
	s := strings.Join(parts, "; ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// renderJoin is the new serve node joining the large node's streams.
func renderJoin(b *strings.Builder, r *Results) {
	for _, s := range r.Sizes {
		j := s.Join
		if j == nil {
			continue
		}
		fmt.Fprintf(b, "## A new serve node joining (%s)\n\n", s.Label)
		if j.Proxy != "" {
			fmt.Fprintf(b, "**Not measured directly:** %s. The replay of the whole stream (above) stands in for it: a joining node applies the same messages.\n\n", j.Err)
			continue
		}
		fmt.Fprintf(b, "Right after the large node was ready, it published its views snapshot (`POST /admin/snapshot`: %s), then `marketd serve --nats %s` started on an empty data dir (unpinned; memory cgroup: %s) and was timed to `/readyz` 200: it restores the tier's views snapshot (`--join snapshot`, the default), then its projector catches up with the streams after it. The large node ran meanwhile (idle, or still compacting after its first cycle).\n\n",
			snapshotCell(j), j.NatsURL, cgroupCell(j.Cgroup))
		fmt.Fprintf(b, "| ready | CPU | peak RSS | its view store (apparent / on disk) | target met (≤ %s) |\n|---:|---:|---:|---:|---|\n", fmtDur(targetJoin))
		met := yes(j.ReadyOK && j.Ready <= targetJoin)
		if j.Err != "" {
			met += " (" + strings.ReplaceAll(j.Err, "|", "/") + ")"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s / %s | %s |\n\n", fmtDur(j.Ready), fmtDur(j.CPU), mib(j.PeakRSS), mib(j.Store.Apparent), mib(j.Store.OnDisk), met)
		if c := j.Cgroup; c != nil && c.Mechanism != "" {
			fmt.Fprintf(b, "Its memory cgroup: peak %s (sampled %s), %d major faults, %d OOM kills.\n\n", mib(c.Peak), mib(c.SampledPeak), c.End.MajFaults, c.End.OOMKills)
		}
	}
}

// snapshotCell says how the views snapshot a joining node starts from
// was published, and whether the node restored it.
func snapshotCell(j *JoinRun) string {
	var out string
	if j.Snapshot == nil {
		out = "none: " + j.SnapshotErr
	} else {
		out = fmt.Sprintf("%s in %s", mib(j.Snapshot.Bytes), fmtDur(j.Snapshot.Took))
	}
	if j.Restored {
		return out + fmt.Sprintf("; the serve node restored it in %s", fmtDur(j.RestoreTook))
	}
	return out + "; the serve node did not restore it and applied the streams from their start"
}

// renderStore is the view store's size per token.
func renderStore(b *strings.Builder, r *Results) {
	for _, s := range r.Sizes {
		st := s.Store
		if st == nil {
			continue
		}
		fmt.Fprintf(b, "## View store on disk (%s)\n\n", s.Label)
		tokens := fmt.Sprintf("%d tokens (%d collections × %d)", st.Tokens, s.Collections, s.TokensPerCollection)
		if st.Tokens == 0 {
			tokens = "an unknown number of tokens (the simulator varied them), so no figure per token"
		}
		fmt.Fprintf(b, "`<data-dir>/badger` after the first, full cycle and %d tick + ingest cycle(s), then the value-log GC: %s. The market holds %s.\n\n", st.Cycles, st.GCNote, tokens)
		fmt.Fprintf(b, "| when | apparent (du --apparent-size) | on disk (du) | files | bytes per token (larger of the two) |\n|---|---:|---:|---:|---:|\n")
		row := func(name string, u DiskUsage) {
			if u.Files == 0 {
				fmt.Fprintf(b, "| %s | – | – | – | – |\n", name)
				return
			}
			per := "–"
			if st.Tokens > 0 {
				per = fmt.Sprintf("%.0f", float64(u.Max())/float64(st.Tokens))
			}
			fmt.Fprintf(b, "| %s | %s | %s | %d | %s |\n", name, mib(u.Apparent), mib(u.OnDisk), u.Files, per)
		}
		row("node running, after the GC wait", st.Live)
		row("**after a clean stop** (judged)", st.Stopped)
		row("rebuilt by `marketd replay` (– when replay did not finish)", st.AfterReplay)
		row("the streams (`<data-dir>/nats`), for scale", st.Streams)
		fmt.Fprintf(b, "\nTargets: ≤ %.0f bytes per token and ≤ %.0f GB in all after a clean stop.\n\n", targetPerToken, float64(targetStore)/1e9)
	}
}

// verdicts summarises every target: the read path's, freshness, a cycle's
// cost and replay, then the large node's (largeNodeVerdicts).
func verdicts(r *Results) []verdict {
	var vs []verdict
	var demo, big *SizeRun
	if len(r.Sizes) > 0 {
		demo = r.Sizes[0]
	}
	if len(r.Sizes) > 1 {
		big = r.Sizes[1]
	}
	notMeasured := verdict{measured: "not measured", met: "?"}

	// Read path vs reference.
	worstRPS, worstP99 := notMeasured, notMeasured
	worstRPS.target = fmt.Sprintf("every read endpoint ≥ %.2f × reference rps (demo)", targetRPSvsRef)
	worstP99.target = fmt.Sprintf("every read endpoint p99 ≤ %.0f × reference p99 (demo)", targetP99vsRef)
	if demo != nil {
		minR, maxP := 1e9, 0.0
		var minName, maxName string
		n, failed := 0, 0
		for _, e := range demo.Endpoints {
			if e.Ref == nil || len(e.Ref.Runs) == 0 || len(e.Marketd.Runs) == 0 {
				failed++
				continue
			}
			if !e.Marketd.OK() {
				failed++
			}
			n++
			if x := e.RPSRatio(); x < minR {
				minR, minName = x, e.Name
			}
			if x := ratio(float64(e.Marketd.Median.P99), float64(e.Ref.Median.P99)); x > maxP {
				maxP, maxName = x, e.Name
			}
		}
		if n > 0 {
			extra := ""
			if failed > 0 {
				extra = fmt.Sprintf("; %d endpoint(s) failed or had errors", failed)
			}
			worstRPS.measured = fmt.Sprintf("lowest %s (%s)%s", fmtRatio(minR, targetRPSvsRef), minName, extra)
			worstRPS.met = yes(minR >= targetRPSvsRef && failed == 0)
			worstP99.measured = fmt.Sprintf("highest %s (%s)%s", fmtRatio(maxP, targetP99vsRef), maxName, extra)
			worstP99.met = yes(maxP <= targetP99vsRef && failed == 0)
		}
	}
	vs = append(vs, worstRPS, worstP99)

	// Large vs demo.
	bigv := notMeasured
	bigv.target = fmt.Sprintf("at the large size every read endpoint ≥ %.1f × its demo rps", targetBigVsDemo)
	if big != nil {
		bigv.target = fmt.Sprintf("at %d collections every read endpoint ≥ %.1f × its demo rps", big.Collections, targetBigVsDemo)
		minR, name, n, failed := 1e9, "", 0, 0
		for _, e := range big.Endpoints {
			d := findEP(demo, e.Name)
			if d == nil || d.Marketd.Median.RPS == 0 || len(e.Marketd.Runs) == 0 {
				failed++
				continue
			}
			if !e.Marketd.OK() {
				failed++
			}
			n++
			if x := ratio(e.Marketd.Median.RPS, d.Marketd.Median.RPS); x < minR {
				minR, name = x, e.Name
			}
		}
		if n > 0 {
			bigv.measured = fmt.Sprintf("lowest %s (%s)", fmtRatio(minR, targetBigVsDemo), name)
			if failed > 0 {
				bigv.measured += fmt.Sprintf("; %d endpoint(s) not comparable or with errors", failed)
			}
			bigv.met = yes(minR >= targetBigVsDemo && failed == 0)
		} else if big.Skipped != "" {
			bigv.measured = "not measured: " + big.Skipped
		}
	}
	vs = append(vs, bigv)

	// Freshness.
	fv := notMeasured
	fv.target = fmt.Sprintf("upstream change served ≤ %s after the cycle publishes it (p99, demo)", targetFreshP99)
	_, _, afterPub, _, _, observed, withPub := freshStats(r)
	if observed > 0 {
		p99 := percentile(afterPub, 99)
		what := "last change served after publish end"
		if withPub == 0 {
			what = "from ingest start (upper bound: no publish time in the summary)"
		}
		fv.measured = fmt.Sprintf("p99 %s %s, %d/%d observed", fmtDur(p99), what, observed, len(r.Fresh))
		fv.met = yes(p99 <= targetFreshP99 && observed == len(r.Fresh))
		if p99 > targetFreshP99 && withPub == 0 {
			fv.met = "? (bound only)"
		}
	} else if r.FreshErr != "" {
		fv.measured = "not measured: " + r.FreshErr
	}
	vs = append(vs, fv)

	// Cycle.
	cv := notMeasured
	cv.target = fmt.Sprintf("full cycle at the large size ≤ %s wall, ≤ %.0f core on average", targetCycleWall, targetCycleCores)
	if big != nil && big.Cycle != nil && big.Cycle.Err == "" && big.Cycle.Wall > 0 {
		c := big.Cycle
		cores := c.CPU.Seconds() / targetCycleWall.Seconds()
		cv.measured = fmt.Sprintf("cycle of %d tick(s), %d messages: %s wall, %s CPU (%.2f cores over the interval)",
			c.Ticks, c.Published, fmtDur(c.Wall), fmtDur(c.CPU), cores)
		if c.Ticks > 1 {
			cv.measured += fmt.Sprintf(", more than one step of change: the market was %s behind the wall clock", c.Lag.Round(time.Second))
		}
		cv.measured += fmt.Sprintf("; first full cycle %s wall, %s CPU", fmtDur(big.Ready), fmtDur(big.ReadyCPU))
		cv.met = yes(c.Wall <= targetCycleWall && cores <= targetCycleCores && c.Ticks == 1)
	} else if big != nil && big.Cycle != nil {
		cv.measured = "failed: " + big.Cycle.Err
		cv.met = "**NO**"
	} else if big != nil && !big.ReadyOK && big.Ready > 0 {
		cv.measured = fmt.Sprintf("the first full cycle had not been projected after %s (%s CPU, %.2f cores on average)",
			fmtDur(big.Ready), fmtDur(big.ReadyCPU), ratio(big.ReadyCPU.Seconds(), big.Ready.Seconds()))
		cv.met = "**NO**"
	} else if big != nil && big.Skipped != "" {
		cv.measured = "not measured: " + big.Skipped
	}
	vs = append(vs, cv)

	// Replay.
	rv := notMeasured
	rv.target = fmt.Sprintf("replay wall ≤ %.1f × the floor (raw read of the streams + StreamWriter write of the store it built)", targetReplay)
	if len(r.Replays) > 0 {
		var parts []string
		met, unknown := true, false
		for _, x := range r.Replays {
			rt, ok := replayVerdict(x)
			p := fmt.Sprintf("%s: %s (replay %s, floor %s = raw read %s + write %s; %d msgs, %s)", x.Label, fmtRatio(rt, targetReplay),
				fmtDur(x.Wall), fmtDur(x.Floor()), fmtDur(x.RawWall), fmtDur(x.Floor()-x.RawWall), x.Msgs, mib(x.Bytes))
			if x.Floor() == 0 {
				p = fmt.Sprintf("%s: floor not measured (replay %s, %d msgs, %s)", x.Label, fmtDur(x.Wall), x.Msgs, mib(x.Bytes))
				if x.Write != nil && x.Write.Err != "" {
					p += ", write: " + x.Write.Err
				}
			}
			if x.Partial > 0 {
				p += fmt.Sprintf(", cut off by its bound after %d messages", x.Partial)
			}
			if x.Err != "" {
				p += ", " + x.Err
			}
			parts = append(parts, p)
			met = met && ok != "**NO**"
			unknown = unknown || ok == "?"
		}
		rv.measured = strings.Join(parts, "; ")
		rv.met = yes(met)
		if met && unknown {
			rv.met = "?"
		}
	}
	vs = append(vs, rv)

	vs = append(vs, largeNodeVerdicts(r, demo, big, bigv)...)
	for i := range vs {
		vs[i].measured = strings.ReplaceAll(vs[i].measured, "|", "/")
	}
	return vs
}

// renderReadme is the README's Performance section for this run: the
// machine, the targets and the demo-size read table, pointing at the full
// report.
func renderReadme(r *Results, reportPath string) string {
	full := renderReport(r)
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "## Performance\n\n")
	fmt.Fprintf(&b, "`make bench` (`scripts/bench`, about 30 minutes) measures the read path against a minimal Fiber server serving the same bytes with the same headers, a large simulated market (run inside a 3 GiB memory cgroup), reads while a cycle is applied, freshness, cycle cost, replay against its floor (reading the streams raw and writing its store with StreamWriter), a new serve node joining, the view store's bytes per token and memory, and writes a report under `bench-results/` (git-ignored). Latest run: %s on %s cores (%s), %s, %s; load average %s at the start (the machine was shared, so figures are noisy).\n\n",
		r.Started.UTC().Format("2006-01-02"), m["nproc"], m["cpu"], m["memory"], m["go"], m["load"])
	section := func(title string) string {
		i := strings.Index(full, title)
		if i < 0 {
			return ""
		}
		rest := full[i:]
		if j := strings.Index(rest[len(title):], "\n## "); j >= 0 {
			rest = rest[:len(title)+j+1]
		}
		return strings.Replace(rest, "## ", "### ", 1)
	}
	b.WriteString(section("## Targets"))
	b.WriteString(section("## Read path — demo"))
	fmt.Fprintf(&b, "Full report of that run: `%s`.\n", reportPath)
	return b.String()
}

// largeNodeVerdicts are the targets of a lean node at the large size: memory
// inside the cgroup, the store per token, a joining node, start-up, p99
// against demo (idle and during a cycle) and replay's memory. bigRPS is
// the large-vs-demo read verdict ("serves at full speed").
func largeNodeVerdicts(r *Results, demo, big *SizeRun, bigRPS verdict) []verdict {
	nm := func(target string) verdict { return verdict{target: target, measured: "not measured", met: "?"} }
	var vs []verdict

	// Memory inside the cgroup.
	mv := nm(fmt.Sprintf("the large node serves at full speed inside a %s memory cgroup; anonymous ≤ %s", fmtSize(3<<30), fmtSize(targetAnon)))
	if big != nil {
		c := big.Cgroup
		anon := fmt.Sprintf("anonymous peak %s (sampled), peak RSS %s", mib(big.MaxAnon), mib(big.PeakRSS))
		switch {
		case c == nil:
			mv.measured = "not measured: the large node ran uncapped (BENCH_MEMCAP=0); " + anon
		case c.Mechanism == "":
			mv.measured = "not measured: no memory cgroup on this machine (" + c.Why + "); uncapped " + anon
		default:
			mv.target = fmt.Sprintf("the large node serves at full speed inside a %s memory cgroup; anonymous ≤ %s", fmtSize(c.Limit), fmtSize(targetAnon))
			peak := c.Peak
			if peak == 0 {
				peak = c.SampledPeak
			}
			ready := "ready after " + fmtDur(big.Ready)
			if !big.ReadyOK {
				ready = "**not ready** after " + fmtDur(big.Ready)
			}
			mv.measured = fmt.Sprintf("%s (%s): %s; reads %s; group peak %s; %s; major faults %s during the reads; OOM kills %d",
				c.Mechanism, fmtSize(c.Limit), ready, bigRPS.measured, mib(peak), anon,
				faultDelta(big.Faults.AtReady, big.Faults.AfterReads), c.End.OOMKills)
			if big.MaxAnon > 0 || !big.ReadyOK {
				mv.met = yes(big.ReadyOK && c.End.OOMKills == 0 && bigRPS.met == "yes" && big.MaxAnon > 0 && big.MaxAnon <= targetAnon)
			}
		}
	}
	vs = append(vs, mv)

	// Store per token.
	sv := nm(fmt.Sprintf("view store ≤ %.0f bytes per token and ≤ %.0f GB after three cycles and a value-log GC", targetPerToken, float64(targetStore)/1e9))
	if big != nil && big.Store != nil {
		st := big.Store
		switch {
		case st.Stopped.Files == 0:
			sv.measured = "not measured: the store could not be read after the stop"
		case st.Tokens == 0:
			sv.measured = fmt.Sprintf("%s in all; tokens per collection unknown (the simulator varied them)", mib(st.Stopped.Max()))
		default:
			sv.measured = fmt.Sprintf("%.0f bytes per token (%s for %d tokens, after %d cycle(s) besides the first)", st.PerToken(), mib(st.Stopped.Max()), st.Tokens, st.Cycles)
			sv.met = yes(st.PerToken() <= targetPerToken && st.Stopped.Max() <= targetStore && st.Cycles >= 3)
		}
	}
	vs = append(vs, sv)

	// A joining serve node.
	jv := nm(fmt.Sprintf("a new serve node joining the large node's streams ready ≤ %s", fmtDur(targetJoin)))
	if big != nil && big.Join != nil {
		j := big.Join
		if j.Proxy != "" {
			jv.measured = "no serve node: " + j.Err
			if x := replayOf(r, big.Label); x != nil && x.Wall > 0 {
				jv.measured += fmt.Sprintf("; proxy: replay of the whole stream took %s", fmtDur(x.Wall))
				jv.met = yes(x.Err == "" && x.Wall <= targetJoin) + " (proxy)"
			}
		} else {
			jv.measured = fmt.Sprintf("ready after %s, %s CPU, peak RSS %s; views snapshot %s", fmtDur(j.Ready), fmtDur(j.CPU), mib(j.PeakRSS), snapshotCell(j))
			if j.Err != "" {
				jv.measured += "; " + j.Err
			}
			jv.met = yes(j.ReadyOK && j.Ready <= targetJoin)
		}
	}
	vs = append(vs, jv)

	// Start-up.
	rv := nm(fmt.Sprintf("`marketd all` on an empty data dir to ready ≤ %s at 100,000 collections (≤ %s at 10,000)", fmtDur(targetReadyLarge), fmtDur(targetReadyMedium)))
	if big != nil && big.Ready > 0 {
		t := readyTarget(big.Collections)
		rv.target = fmt.Sprintf("`marketd all` on an empty data dir to ready ≤ %s at %d collections", fmtDur(t), big.Collections)
		if big.ReadyOK {
			rv.measured = fmt.Sprintf("%s wall, %s CPU", fmtDur(big.Ready), fmtDur(big.ReadyCPU))
		} else {
			rv.measured = fmt.Sprintf("not ready after %s", fmtDur(big.Ready))
		}
		if big.Cgroup != nil && big.Cgroup.Mechanism != "" {
			rv.measured += fmt.Sprintf(" (inside the %s cgroup)", fmtSize(big.Cgroup.Limit))
		}
		rv.met = yes(big.ReadyOK && big.Ready <= t)
	}
	vs = append(vs, rv)

	// p99 against demo, idle.
	pv := nm(fmt.Sprintf("read p99 at the large size ≤ %.0f × demo p99, every endpoint", targetP99vsDemo))
	if big != nil && demo != nil {
		worst, name, n, bad := 0.0, "", 0, 0
		for _, e := range big.Endpoints {
			d := findEP(demo, e.Name)
			if d == nil || d.Marketd.Median.P99 == 0 || len(e.Marketd.Runs) == 0 {
				bad++
				continue
			}
			if !e.Marketd.OK() {
				bad++
			}
			n++
			if x := ratio(float64(e.Marketd.Median.P99), float64(d.Marketd.Median.P99)); x > worst {
				worst, name = x, e.Name
			}
		}
		if n > 0 {
			pv.measured = fmt.Sprintf("highest %s (%s)", fmtRatio(worst, targetP99vsDemo), name)
			if bad > 0 {
				pv.measured += fmt.Sprintf("; %d endpoint(s) not comparable or with errors", bad)
			}
			pv.met = yes(worst <= targetP99vsDemo && bad == 0)
		}
	}
	vs = append(vs, pv)

	// p99 during a cycle.
	cv := nm(fmt.Sprintf("read p99 while a cycle is applied at the large size ≤ %.0f × demo p99 (mixed set)", targetP99vsDemo))
	var demoIdle *MixedRun
	if demo != nil && len(demo.Mixed) > 0 && !demo.Mixed[0].During {
		demoIdle = demo.Mixed[0]
	}
	if big != nil && demoIdle != nil && demoIdle.Stat.P99 > 0 {
		var parts []string
		met, n := true, 0
		for _, m := range big.Mixed {
			if !m.During {
				continue
			}
			n++
			x := ratio(float64(m.Stat.P99), float64(demoIdle.Stat.P99))
			parts = append(parts, fmt.Sprintf("%s: p99 %s = %s × demo's %s (cycle applied during %.0f%% of the run)", m.Label, fmtDur(m.Stat.P99),
				fmtRatio(x, targetP99vsDemo), fmtDur(demoIdle.Stat.P99), 100*m.Overlap))
			met = met && x <= targetP99vsDemo && m.ok()
		}
		if n > 0 {
			cv.measured = strings.Join(parts, "; ")
			cv.met = yes(met)
		}
	}
	vs = append(vs, cv)

	// Replay's memory.
	mr := nm(fmt.Sprintf("`marketd replay` peak RSS ≤ %s", fmtSize(targetReplayRSS)))
	if big != nil {
		if x := replayOf(r, big.Label); x != nil && x.PeakRSS > 0 {
			mr.measured = fmt.Sprintf("%s: peak %s", x.Label, mib(x.PeakRSS))
			mr.met = yes(x.PeakRSS <= targetReplayRSS && x.Err == "")
		}
	}
	vs = append(vs, mr)
	return vs
}

// replayVerdict is x's wall time over its floor and whether that meets
// targetReplay ("yes", "**NO**", or "?" when the floor was not measured).
func replayVerdict(x *ReplayRun) (float64, string) {
	f := x.Floor()
	if x.Err != "" {
		return ratio(x.Wall.Seconds(), f.Seconds()), "**NO**"
	}
	if f == 0 {
		return 0, "?"
	}
	rt := ratio(x.Wall.Seconds(), f.Seconds())
	return rt, yes(rt <= targetReplay)
}

// replayOf is the replay of the size labelled label, or nil.
func replayOf(r *Results, label string) *ReplayRun {
	for _, x := range r.Replays {
		if x.Label == label {
			return x
		}
	}
	return nil
}
