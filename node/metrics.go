package node

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/internal/pace"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/store"
)

// The metrics of a node: ingest's polls and publishes, the projector's
// position and lag, the store's size, and how long background work gave
// way to reads.

// projectorCollector exposes the projector's applied position and its lag
// behind each stream's last sequence (read from the server at scrape time),
// and what its expiry sweeps did.
type projectorCollector struct {
	p                              *Views
	js                             jetstream.JetStream
	applied, lag, swept, sweepSecs *prometheus.Desc
	skipped, incomplete            *prometheus.Desc
}

func registerProjectorMetrics(reg *prometheus.Registry, p *Views, js jetstream.JetStream) {
	reg.MustRegister(&projectorCollector{
		p: p, js: js,
		applied: prometheus.NewDesc("marketd_projector_applied_sequence", "Last stream sequence applied to this node's views.", []string{"stream"}, nil),
		lag:     prometheus.NewDesc("marketd_projector_lag_messages", "Stream sequences not yet applied to this node's views.", []string{"stream"}, nil),
		swept: prometheus.NewDesc("marketd_projector_sweep_renders_total",
			"Views the expiry sweep re-rendered because a listing expired or a failing source's rows aged out: listing snapshots (with their floors) and token views.", []string{"view"}, nil),
		sweepSecs: prometheus.NewDesc("marketd_projector_sweep_seconds_total", "Time the expiry sweeps took (wall time, holding the projector's write lock).", nil, nil),
		skipped: prometheus.NewDesc("marketd_bus_skipped_total",
			"Stream sequences the projector passed over because the stream no longer holds them (damaged or purged), or could not decode; their ranges are on /admin/sources.", []string{"stream"}, nil),
		incomplete: prometheus.NewDesc("marketd_bus_views_incomplete", "1 from a skipped stream sequence until a full ingest cycle is applied after it, else 0.", nil, nil),
	})
}

func (c *projectorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.applied
	ch <- c.lag
	ch <- c.swept
	ch <- c.sweepSecs
	ch <- c.skipped
	ch <- c.incomplete
}

func (c *projectorCollector) Collect(ch chan<- prometheus.Metric) {
	g := c.p.Gaps()
	for _, name := range []string{bus.StateStream, bus.SalesStream} {
		ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(g.Skipped[name]), name)
	}
	inc := 0.0
	if g.Incomplete {
		inc = 1
	}
	ch <- prometheus.MustNewConstMetric(c.incomplete, prometheus.GaugeValue, inc)
	sw := c.p.Swept()
	ch <- prometheus.MustNewConstMetric(c.swept, prometheus.CounterValue, float64(sw.Listings), "listings")
	ch <- prometheus.MustNewConstMetric(c.swept, prometheus.CounterValue, float64(sw.Tokens), "token")
	ch <- prometheus.MustNewConstMetric(c.sweepSecs, prometheus.CounterValue, sw.Duration.Seconds())
	pos := c.p.Applied()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, s := range []struct {
		name    string
		applied uint64
	}{{bus.StateStream, pos.State}, {bus.SalesStream, pos.Sales}} {
		ch <- prometheus.MustNewConstMetric(c.applied, prometheus.GaugeValue, float64(s.applied), s.name)
		stream, err := c.js.Stream(ctx, s.name)
		if err != nil {
			continue
		}
		last := stream.CachedInfo().State.LastSeq
		if info, err := stream.Info(ctx); err == nil {
			last = info.State.LastSeq
		}
		lag := float64(0)
		if last > s.applied {
			lag = float64(last - s.applied)
		}
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, lag, s.name)
	}
}

// registerStoreMetrics exposes the size of this node's views.
func registerStoreMetrics(reg *prometheus.Registry, st *Views) {
	gauge := func(name, help string, f func(store.Sizes) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return f(st.Sizes()) }))
	}
	gauge("marketd_views_lsm_bytes", "Bytes of the views' Badger LSM tree on disk.", func(s store.Sizes) float64 { return float64(s.LSMBytes) })
	gauge("marketd_views_value_log_bytes", "Bytes of the views' Badger value log on disk.", func(s store.Sizes) float64 { return float64(s.ValueLogBytes) })
	gauge("marketd_views_cache_entries", "Views, pages and resolved ids held in the in-memory cache.", func(s store.Sizes) float64 { return float64(s.CacheEntries) })
	gauge("marketd_views_cache_bytes", "Approximate bytes of the in-memory view cache.", func(s store.Sizes) float64 { return float64(s.CacheBytes) })
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "marketd_views_value_log_gc_rewrites_total",
		Help: "Value-log files rewritten to reclaim the space of superseded views."},
		func() float64 { return float64(st.Sizes().GCRewrites) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "marketd_views_compactions_total",
		Help: "Compactions of the idle view store: its LSM tree merged into one level, so that the value-log GC finds every superseded view."},
		func() float64 { return float64(st.Sizes().Compactions) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "marketd_views_sales_bytes_total",
		Help: "Bytes (keys and values) of the sales the views stored since the store opened: the sales history is kept to its start, so the store grows by it."},
		func() float64 { return float64(st.Sizes().SalesBytes) }))
}

// registerPaceMetrics exposes how long background work gave way to reads.
func registerPaceMetrics(reg *prometheus.Registry, gate *pace.Gate) {
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "marketd_background_paused_seconds_total",
		Help: "Time ingest and the projector slept to let arriving reads run first, summed over their goroutines."},
		func() float64 { return gate.Stats().Paused.Seconds() }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "marketd_background_pauses_total",
		Help: "Times ingest or the projector slept to let arriving reads run first."},
		func() float64 { return float64(gate.Stats().Pauses) }))
}

// newPollDuration is the per-source poll duration histogram; ingest feeds
// it through Config.OnCycle (observeCycle).
func newPollDuration(reg *prometheus.Registry) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "marketd_ingest_poll_duration_seconds",
		Help:    "Wall time of one source's poll in a cycle (every page, publishing included), by source.",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"source"})
	reg.MustRegister(h)
	return h
}

// observeCycle records each polled source's duration of a completed cycle.
func observeCycle(h *prometheus.HistogramVec, sum ingest.Summary) {
	for name, s := range sum.Sources {
		if s.PollsOK+s.PollsFailed > 0 {
			h.WithLabelValues(name).Observe(float64(s.TookMS) / 1000)
		}
	}
}

// ingestCollector exposes ingest's cumulative Stats at scrape time, so ingest
// itself stays free of the metrics library.
type ingestCollector struct {
	in                                 *ingest.Ingest
	polls, rejected, accepted          *prometheus.Desc
	published, unchanged, cycles, last *prometheus.Desc
	lastSuccess                        *prometheus.Desc
}

func registerIngestMetrics(reg *prometheus.Registry, in *ingest.Ingest) {
	reg.MustRegister(&ingestCollector{
		in:        in,
		polls:     prometheus.NewDesc("marketd_ingest_polls_total", "Upstream polls by source and outcome (ok or the error class).", []string{"source", "outcome"}, nil),
		rejected:  prometheus.NewDesc("marketd_ingest_rejected_rows_total", "Upstream rows rejected by source and reason.", []string{"source", "reason"}, nil),
		accepted:  prometheus.NewDesc("marketd_ingest_accepted_rows_total", "Upstream rows accepted by source.", []string{"source"}, nil),
		published: prometheus.NewDesc("marketd_ingest_published_messages_total", "Messages published to the bus.", nil, nil),
		unchanged: prometheus.NewDesc("marketd_ingest_unchanged_messages_total", "Messages skipped because their subject did not change.", nil, nil),
		cycles:    prometheus.NewDesc("marketd_ingest_cycles_total", "Completed ingest cycles.", nil, nil),
		last:      prometheus.NewDesc("marketd_ingest_last_cycle_timestamp_seconds", "End of the last ingest cycle, unix seconds.", nil, nil),
		lastSuccess: prometheus.NewDesc("marketd_ingest_source_last_success_timestamp_seconds",
			"End of the last cycle in which every poll of the source succeeded, unix seconds (absent until one has).", []string{"source"}, nil),
	})
}

func (c *ingestCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.polls, c.rejected, c.accepted, c.published, c.unchanged, c.cycles, c.last, c.lastSuccess} {
		ch <- d
	}
}

func (c *ingestCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.in.Stats()
	for src, outcomes := range st.Polls {
		for outcome, n := range outcomes {
			ch <- prometheus.MustNewConstMetric(c.polls, prometheus.CounterValue, float64(n), src, outcome)
		}
	}
	for src, reasons := range st.Rejected {
		for reason, n := range reasons {
			ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(n), src, reason)
		}
	}
	for src, n := range st.Accepted {
		ch <- prometheus.MustNewConstMetric(c.accepted, prometheus.CounterValue, float64(n), src)
	}
	ch <- prometheus.MustNewConstMetric(c.published, prometheus.CounterValue, float64(st.Published))
	ch <- prometheus.MustNewConstMetric(c.unchanged, prometheus.CounterValue, float64(st.Unchanged))
	ch <- prometheus.MustNewConstMetric(c.cycles, prometheus.CounterValue, float64(st.Cycles))
	if !st.LastCycle.IsZero() {
		ch <- prometheus.MustNewConstMetric(c.last, prometheus.GaugeValue, float64(st.LastCycle.UnixNano())/1e9)
	}
	for _, s := range c.in.Sources() {
		if !s.LastSuccess.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.lastSuccess, prometheus.GaugeValue, float64(s.LastSuccess.UnixNano())/1e9, s.Source)
		}
	}
}
