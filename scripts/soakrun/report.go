package main

import (
	"errors"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type report struct {
	opts         options
	started      time.Time
	readyAfter   time.Duration
	paths        int
	samples      []sample
	wrk          wrkResult
	wrkRaw       string
	ticks        tickStats
	digestAt     string
	digestLive   string
	digestReplay string
	notes        []string
}

// slope fits y = a + b·x by least squares over the points with x ≥ from
// and returns b; ok is false with fewer than three such points.
func slope(xs, ys []float64, from float64) (b float64, ok bool) {
	var n, sx, sy, sxx, sxy float64
	for i, x := range xs {
		if x < from {
			continue
		}
		n++
		sx += x
		sy += ys[i]
		sxx += x * x
		sxy += x * ys[i]
	}
	d := n*sxx - sx*sx
	if n < 3 || d == 0 {
		return 0, false
	}
	return (n*sxy - sx*sy) / d, true
}

// series returns the samples' minutes and one measure.
func (r *report) series(f func(sample) float64) (xs, ys []float64) {
	for _, s := range r.samples {
		xs = append(xs, s.at.Minutes())
		ys = append(ys, f(s))
	}
	return xs, ys
}

// slopes are the MB/min (goroutines/min) of RSS, heap and goroutines after
// warm-up.
func (r *report) slopes() (rss, heap, gor float64, ok bool) {
	rss, ok = r.slopeOf(func(s sample) float64 { return s.rssMB })
	heap, _ = r.slopeOf(func(s sample) float64 { return s.heapMB })
	gor, _ = r.slopeOf(func(s sample) float64 { return float64(s.goroutines) })
	return rss, heap, gor, ok
}

// slopeOf is the slope of one measure after warm-up, per minute.
func (r *report) slopeOf(f func(sample) float64) (float64, bool) {
	xs, ys := r.series(f)
	return slope(xs, ys, r.opts.warmup.Minutes())
}

// verdict is nil when the soak passed.
func (r *report) verdict() error {
	var errs []error
	if r.wrk.requests == 0 {
		errs = append(errs, errors.New("wrk completed no request"))
	}
	if r.wrk.non2xx > 0 || r.wrk.sockErrs > 0 {
		errs = append(errs, fmt.Errorf("%d non-2xx responses and %d socket errors", r.wrk.non2xx, r.wrk.sockErrs))
	}
	rss, _, _, ok := r.slopes()
	sales, _ := r.slopeOf(func(s sample) float64 { return s.salesMB })
	switch {
	case !ok:
		errs = append(errs, errors.New("too few samples after warm-up for a slope"))
	case rss-max(sales, 0) > r.opts.maxSlope:
		errs = append(errs, fmt.Errorf("RSS grows %.2f MB/min after warm-up, %.2f beyond the sales history's %.2f (limit %.2f)", rss, rss-max(sales, 0), sales, r.opts.maxSlope))
	}
	if r.ticks.failed > 0 {
		errs = append(errs, fmt.Errorf("%d ticks or ingest cycles failed: %s", r.ticks.failed, r.ticks.lastErr))
	}
	if r.digestLive == "" || r.digestLive != r.digestReplay {
		errs = append(errs, fmt.Errorf("digest of the live views %q differs from a replay's %q", r.digestLive, r.digestReplay))
	}
	return errors.Join(errs...)
}

func (r *report) write(dir string) error {
	var csv strings.Builder
	csv.WriteString("seconds,rss_mb,rss_anon_mb,rss_file_mb,heap_inuse_mb,goroutines,rss_vlog_mb,rss_sst_mb,rss_mem_mb,disk_badger_mb,disk_nats_mb,gc_rewrites,cpu_seconds,sales_mb\n")
	for _, s := range r.samples {
		fmt.Fprintf(&csv, "%.0f,%.1f,%.1f,%.1f,%.1f,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%d,%.1f,%.1f\n", s.at.Seconds(), s.rssMB, s.anonMB, s.fileMB, s.heapMB, s.goroutines,
			s.vlogMB, s.sstMB, s.memMB, s.badgerMB, s.natsMB, s.gcRewrites, s.cpuSeconds, s.salesMB)
	}
	if err := os.WriteFile(filepath.Join(dir, "samples.csv"), []byte(csv.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.svg"), []byte(r.svg()), 0o644); err != nil {
		return err
	}
	rss, heap, gor, ok := r.slopes()
	var b strings.Builder
	o := r.opts
	fmt.Fprintf(&b, "# Soak %s\n\n", r.started.Format(time.RFC3339))
	fmt.Fprintf(&b, "`marketd all`, %d simulated collections (%d tokens each), a simulator tick and a projected ingest cycle every %s (cycles take what they take; the next tick follows); "+
		"wrk %d connections, %d threads, %s over %d paths (index, browse, detail, floor, listings, sales, tokens). "+
		"Ready after %s. Samples every %s; warm-up %s.\n\n",
		o.collections, o.tokens, o.tick, o.connections, o.threads, o.duration, r.paths, r.readyAfter.Round(time.Second), o.sample, o.warmup)
	feed := "marketd's default"
	if o.feedEvents > 0 {
		feed = fmt.Sprintf("%d", o.feedEvents)
	}
	market := "marketd's default"
	if o.marketEvents > 0 {
		market = fmt.Sprintf("%d", o.marketEvents)
	}
	fmt.Fprintf(&b, "Change-feed events kept per collection (`--feed-events`): %s; by the market's feed (`--market-events`): %s. Extra marketd flags: `%s`.\n\n", feed, market, o.extra)
	verdict := "PASS"
	if err := r.verdict(); err != nil {
		verdict = "FAIL: " + strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	fmt.Fprintf(&b, "**%s**\n\n", verdict)
	b.WriteString("| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| requests | %d (%.0f/s) |\n", r.wrk.requests, r.wrk.rps)
	fmt.Fprintf(&b, "| latency p50 / p99 | %s / %s |\n", r.wrk.p50, r.wrk.p99)
	fmt.Fprintf(&b, "| non-2xx responses | %d |\n| socket errors | %d |\n", r.wrk.non2xx, r.wrk.sockErrs)
	fmt.Fprintf(&b, "| ticks / projected cycles / failed | %d / %d / %d %s |\n", r.ticks.ticks, r.ticks.cycles, r.ticks.failed, r.ticks.lastErr)
	if len(r.samples) > 0 {
		first, last := r.samples[0], r.samples[len(r.samples)-1]
		peak := first
		for _, s := range r.samples {
			if s.rssMB > peak.rssMB {
				peak = s
			}
		}
		fmt.Fprintf(&b, "| RSS first / peak / last | %.0f / %.0f / %.0f MB |\n", first.rssMB, peak.rssMB, last.rssMB)
		fmt.Fprintf(&b, "| RSS anonymous first / last; file-backed first / last | %.0f / %.0f; %.0f / %.0f MB |\n", first.anonMB, last.anonMB, first.fileMB, last.fileMB)
		fmt.Fprintf(&b, "| RSS of mapped value log / tables / memtables, first / last | %.0f / %.0f / %.0f; %.0f / %.0f / %.0f MB |\n",
			first.vlogMB, first.sstMB, first.memMB, last.vlogMB, last.sstMB, last.memMB)
		fmt.Fprintf(&b, "| disk: views (badger/) first / last; streams (nats/) first / last | %.0f / %.0f; %.0f / %.0f MB |\n", first.badgerMB, last.badgerMB, first.natsMB, last.natsMB)
		fmt.Fprintf(&b, "| value-log files rewritten by GC | %d |\n", last.gcRewrites-first.gcRewrites)
		if d := (last.at - first.at).Minutes(); d > 0 {
			fmt.Fprintf(&b, "| marketd CPU (all parts, with the embedded NATS and simulator) | %.2f cores |\n", (last.cpuSeconds-first.cpuSeconds)/60/d)
		}
		fmt.Fprintf(&b, "| Go heap in use first / last | %.0f / %.0f MB |\n", first.heapMB, last.heapMB)
		fmt.Fprintf(&b, "| goroutines first / last | %d / %d |\n", first.goroutines, last.goroutines)
	}
	if ok {
		sales, _ := r.slopeOf(func(s sample) float64 { return s.salesMB })
		fmt.Fprintf(&b, "| slope after warm-up: RSS | %+.2f MB/min |\n", rss)
		fmt.Fprintf(&b, "| slope after warm-up: sales history stored (keys and values; kept to its start by SPEC) | %+.2f MB/min |\n", sales)
		fmt.Fprintf(&b, "| slope after warm-up: RSS beyond the sales history | %+.2f MB/min (limit %.2f) |\n", rss-max(sales, 0), o.maxSlope)
		anon, _ := r.slopeOf(func(s sample) float64 { return s.anonMB })
		file, _ := r.slopeOf(func(s sample) float64 { return s.fileMB })
		fmt.Fprintf(&b, "| slope after warm-up: RSS anonymous / file-backed | %+.2f / %+.2f MB/min |\n", anon, file)
		vlog, _ := r.slopeOf(func(s sample) float64 { return s.vlogMB })
		sst, _ := r.slopeOf(func(s sample) float64 { return s.sstMB })
		mem, _ := r.slopeOf(func(s sample) float64 { return s.memMB })
		fmt.Fprintf(&b, "| slope after warm-up: RSS of value log / tables / memtables | %+.2f / %+.2f / %+.2f MB/min |\n", vlog, sst, mem)
		bd, _ := r.slopeOf(func(s sample) float64 { return s.badgerMB })
		nd, _ := r.slopeOf(func(s sample) float64 { return s.natsMB })
		fmt.Fprintf(&b, "| slope after warm-up: disk views / streams | %+.2f / %+.2f MB/min |\n", bd, nd)
		fmt.Fprintf(&b, "| slope after warm-up: heap | %+.2f MB/min |\n", heap)
		fmt.Fprintf(&b, "| slope after warm-up: goroutines | %+.1f /min |\n", gor)
	}
	fmt.Fprintf(&b, "| digest at %s: live | `%s` |\n| digest: replay of a copy | `%s` |\n", r.digestAt, r.digestLive, r.digestReplay)
	b.WriteString("\n![memory](memory.svg)\n\nSamples: `samples.csv`. wrk's output:\n\n```\n" + strings.TrimSpace(r.wrkRaw) + "\n```\n")
	for _, n := range r.notes {
		b.WriteString("\n- " + n)
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()+"\n"), 0o644)
}

// svg draws RSS and heap (MB, left axis) and goroutines (right axis)
// against minutes, with the warm-up shaded.
func (r *report) svg() string {
	const w, h, ml, mr, mt, mb = 760, 360, 60, 60, 30, 40
	pw, ph := float64(w-ml-mr), float64(h-mt-mb)
	maxX, maxMB, maxG := r.opts.duration.Minutes(), 1.0, 1.0
	for _, s := range r.samples {
		maxX = math.Max(maxX, s.at.Minutes())
		maxMB = math.Max(maxMB, math.Max(s.rssMB, s.heapMB))
		maxG = math.Max(maxG, float64(s.goroutines))
	}
	maxMB, maxG = niceCeil(maxMB*1.1), niceCeil(maxG*1.1)
	x := func(v float64) float64 { return ml + v/maxX*pw }
	yMB := func(v float64) float64 { return mt + ph - v/maxMB*ph }
	yG := func(v float64) float64 { return mt + ph - v/maxG*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="#eee"/>`+"\n", ml, mt, x(math.Min(r.opts.warmup.Minutes(), maxX))-ml, ph)
	for i := 0; i <= 5; i++ {
		v := maxMB * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n", ml, w-mr, yMB(v), yMB(v), ml-4, yMB(v)+4, v)
		g := maxG * float64(i) / 5
		fmt.Fprintf(&b, `<text x="%d" y="%.1f">%.0f</text>`+"\n", w-mr+4, yG(g)+4, g)
	}
	for i := 0; i <= int(maxX); i++ {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(float64(i)), h-mb+16, i)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">minutes (shaded: warm-up)</text>`+"\n", ml+int(pw/2), h-6)
	fmt.Fprintf(&b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">MB</text>`+"\n", mt+int(ph/2), mt+int(ph/2))
	fmt.Fprintf(&b, `<text x="%d" y="%d" transform="rotate(90 %d %d)" text-anchor="middle">goroutines</text>`+"\n", w-12, mt+int(ph/2), w-12, mt+int(ph/2))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", ml, mt, pw, ph)
	line := func(color string, y func(sample) float64) {
		var pts []string
		for _, s := range r.samples {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.at.Minutes()), y(s)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
	}
	line("#d62728", func(s sample) float64 { return yMB(s.rssMB) })
	line("#ff7f0e", func(s sample) float64 { return yMB(s.anonMB) })
	line("#9467bd", func(s sample) float64 { return yMB(s.fileMB) })
	line("#1f77b4", func(s sample) float64 { return yMB(s.heapMB) })
	line("#2ca02c", func(s sample) float64 { return yG(float64(s.goroutines)) })
	rss, _, _, _ := r.slopes()
	title := fmt.Sprintf("marketd soak: %d collections, %d connections, RSS slope after warm-up %+.2f MB/min", r.opts.collections, r.opts.connections, rss)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13">%s</text>`+"\n", ml, html.EscapeString(title))
	for i, l := range [][2]string{{"#d62728", "RSS"}, {"#ff7f0e", "anon"}, {"#9467bd", "file-backed"}, {"#1f77b4", "Go heap in use"}, {"#2ca02c", "goroutines (right)"}} {
		lx := ml + 10 + i*125
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%d" y="%d">%s</text>`+"\n", lx, lx+18, mt+14, mt+14, l[0], lx+22, mt+18, l[1])
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
