package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// A node of a tier: reconnecting NATS clients, replicated streams, the
// ingest lease, poll statuses from the views and readiness that says why.

// publishAckWait bounds how long an asynchronous publish waits for its
// ack. Without it, an ack lost with a server that died never resolves and
// the cycle hangs; with it, the Publisher re-sends (same message id) until
// the stream has a leader again.
const publishAckWait = 5 * time.Second

// Admin deadlines: every admin action answers (504 past its deadline).
const (
	sourcesDeadline  = 10 * time.Second
	minCycleDeadline = 30 * time.Second
	maxCycleDeadline = 5 * time.Minute
)

// stallAfter is how long the projector may apply nothing while the
// streams hold messages it has not applied before /readyz calls it
// stalled.
const stallAfter = 30 * time.Second

// connectNATS connects to url (one URL or a cluster's comma-separated
// list) with the client's own reconnect: forever, every 250 ms, to any
// server of the list or that the cluster advertises. Disconnects and
// reconnects are logged.
func connectNATS(url, name string, log zerolog.Logger) (*nats.Conn, error) {
	l := log.With().Str("part", "nats").Logger()
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			l.Warn().AnErr("reason", err).Msg("disconnected from NATS; reconnecting")
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			l.Info().Str("server", c.ConnectedUrlRedacted()).Msg("reconnected to NATS")
		}))
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", url, err)
	}
	return nc, nil
}

// reconcileStreams ensures the streams at the configured replica count,
// retrying for a while: a cluster that just started needs a moment to
// elect its meta leader. Every change it made is logged.
func reconcileStreams(ctx context.Context, js jetstream.JetStream, replicas int, log zerolog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		changes, err := bus.ReconcileStreams(actx, js, bus.StreamOptions{Replicas: replicas})
		acancel()
		for _, c := range changes {
			ev := log.Debug()
			if c.Action != "updated" {
				ev = log.Info()
			}
			ev.Str("stream", c.Stream).Int("from", c.FromReplicas).Int("replicas", c.ToReplicas).Msg(c.String())
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		log.Warn().Err(err).Msg("ensure streams; retrying")
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

// nodeID is --node-id, else host name and process id.
func nodeID(cfg config.Config) string {
	if cfg.NodeID != "" {
		return cfg.NodeID
	}
	h, err := os.Hostname()
	if err != nil {
		h = "marketd"
	}
	return fmt.Sprintf("%s-%d", h, os.Getpid())
}

// openLease opens the ingest lease and runs it until shutdown, when it is
// released (after ingest stopped: parts close in reverse order) so a
// standby takes over at once. changed receives a value whenever this node
// gains or loses the lease.
func openLease(ctx context.Context, n *node, js jetstream.JetStream, cfg config.Config, log zerolog.Logger, changed chan<- struct{}) (*bus.Lease, error) {
	l := log.With().Str("part", "lease").Logger()
	lease, err := bus.OpenLease(ctx, js, bus.LeaseOptions{Holder: nodeID(cfg), Period: cfg.IngestLease, Replicas: cfg.StreamReplicas,
		OnChange: func(s bus.LeaseState) {
			if s.Held {
				l.Info().Str("node", s.Node).Uint64("term", s.Term).Uint64("revision", s.Revision).Msg("ingest lease acquired; this node polls")
			} else {
				l.Info().Str("node", s.Node).Str("holder", s.Holder).Msg("ingest lease held elsewhere; this node stands by")
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("ingest lease: %w", err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); lease.Run(rctx) }()
	n.add("lease", func(ctx context.Context) error {
		cancel()
		<-done
		return lease.Release(ctx)
	})
	return lease, nil
}

// lead runs a cycle at once whenever this node acquires the lease (so a
// standby that took over does not wait for the next scheduled cycle), and
// marks the node ready once it has published a first cycle or knows it
// is a standby.
func (a *admin) lead(ctx context.Context, lease *bus.Lease, changed <-chan struct{}) {
	var term uint64
	for {
		if lease.Held() && lease.Term() != term {
			start, t := time.Now(), lease.Term()
			if _, err := a.startupCycle(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				a.log.Error().Err(err).Msg("first cycle of this lease term failed; retrying")
			} else {
				term = t // a failed first cycle is retried, or the node would never turn ready
				a.published(t)
				a.log.Info().Dur("took", time.Since(start)).Msg("first cycle of this lease term published; ready")
			}
		} else if !lease.Held() && lease.State().Holder != "" && !a.ready.Load() {
			a.markReady()
			a.log.Info().Str("holder", lease.State().Holder).Msg("standby ingest; ready")
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-time.After(lease.Period() / 4):
		}
	}
}

// published records that this node published the first cycle of lease
// term t: it is ready while it holds that term.
func (a *admin) published(t uint64) {
	a.leadTerm.Store(t)
	a.markReady()
}

// leaseReason says why an ingest that takes part in the lease is not
// ready, "" when it is: it holds the lease and has published the first
// cycle of that term (lead), or it stands by behind another holder. An
// ingest whose lease lapsed (the bus was unreachable for longer than its
// hold) and that has not taken it back is neither: it would refuse
// POST /admin/ingest and publish nothing, so it is not ready, even once
// NATS is reachable again.
func (a *admin) leaseReason() string {
	s := a.lease.State()
	switch {
	case s.Held && a.leadTerm.Load() == s.Term:
		return ""
	case s.Held:
		return fmt.Sprintf("ingest lease acquired (term %d): its first cycle is not yet published", s.Term)
	case s.Holder != "" && s.Holder != s.Node:
		return "" // a standby
	default:
		return "ingest lease not held and no other holder seen: acquiring it"
	}
}

// cycleDeadline bounds POST /admin/ingest: the poll interval, within
// [minCycleDeadline, maxCycleDeadline]. The node's own start-up cycles are
// not bounded by it (admin.startupCycle).
func cycleDeadline(cfg config.Config) time.Duration {
	return min(max(cfg.PollInterval, minCycleDeadline), maxCycleDeadline)
}

// Readiness implements httpapi.Readiness.
func (a *admin) Readiness() (bool, string) {
	if a.nc != nil && !a.nc.IsConnected() {
		return false, "bus unreachable: NATS connection " + strings.ToLower(a.nc.Status().String())
	}
	if a.views != nil {
		if reason := a.views.Rebuilding(); reason != "" {
			return false, reason
		}
		if reason := a.views.Verifying(); reason != "" {
			return false, reason
		}
		if reason := a.views.Gaps().Reason(); reason != "" {
			return false, reason
		}
	}
	if a.lease != nil {
		if reason := a.leaseReason(); reason != "" {
			return false, reason
		}
	}
	if !a.ready.Load() {
		if a.ingest != nil && a.views == nil {
			return false, "first ingest cycle not yet published"
		}
		if a.ingest != nil {
			return false, "first ingest cycle not yet projected"
		}
		if a.mon != nil {
			return false, "catching up with the streams: " + a.mon.progress()
		}
		return false, "starting"
	}
	if a.mon != nil {
		if reason := a.mon.reason(); reason != "" {
			return false, reason
		}
	}
	return true, ""
}

// lagMonitor samples the streams' heads and the projector's applied
// position, and says when the node is not fit to serve: the bus cannot
// be asked, the projector stalled, or the views lag the streams by more
// than one cycle. "Behind by more than one cycle": the applied position
// does not cover the heads the streams had one poll interval ago.
type lagMonitor struct {
	p     interface{ Applied() readmodel.Position }
	js    jetstream.JetStream
	cycle time.Duration
	now   func() time.Time

	mu           sync.Mutex
	samples      []headSample // oldest first, spanning a little over one cycle
	busErr       error
	applied      readmodel.Position
	lastProgress time.Time
}

type headSample struct {
	at    time.Time
	heads readmodel.Position
}

func newLagMonitor(p interface{ Applied() readmodel.Position }, js jetstream.JetStream, cycle time.Duration) *lagMonitor {
	return &lagMonitor{p: p, js: js, cycle: cycle, now: time.Now, lastProgress: time.Now()}
}

func (m *lagMonitor) run(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		m.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *lagMonitor) sample(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	heads, err := bus.Heads(cctx, m.js)
	cancel()
	m.record(m.now(), heads, m.p.Applied(), err)
}

// record notes one sample: the streams' heads (or why they could not be
// read) and the applied position at now.
func (m *lagMonitor) record(now time.Time, heads, applied readmodel.Position, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if applied != m.applied {
		m.applied, m.lastProgress = applied, now
	}
	m.busErr = err
	if err != nil {
		return
	}
	m.samples = append(m.samples, headSample{at: now, heads: heads})
	// Keep the newest sample at least one cycle old, and everything after.
	drop := 0
	for drop+1 < len(m.samples) && now.Sub(m.samples[drop+1].at) >= m.cycle {
		drop++
	}
	m.samples = m.samples[drop:]
}

func (m *lagMonitor) reason() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.busErr != nil {
		return "bus unreachable: " + m.busErr.Error()
	}
	if len(m.samples) == 0 {
		return ""
	}
	latest := m.samples[len(m.samples)-1].heads
	if !m.applied.Covers(latest) && now.Sub(m.lastProgress) > stallAfter {
		return fmt.Sprintf("projector stalled: nothing applied for %s while the streams hold more (applied state %d of %d, sales %d of %d)",
			now.Sub(m.lastProgress).Round(time.Second), m.applied.State, latest.State, m.applied.Sales, latest.Sales)
	}
	if old := m.samples[0]; now.Sub(old.at) >= m.cycle && !m.applied.Covers(old.heads) {
		return fmt.Sprintf("behind the streams by more than one cycle (%s): applied state %d, sales %d; the streams held state %d, sales %d at %s",
			m.cycle, m.applied.State, m.applied.Sales, old.heads.State, old.heads.Sales, old.at.UTC().Format(time.RFC3339))
	}
	return ""
}

func (m *lagMonitor) progress() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busErr != nil {
		return "bus unreachable: " + m.busErr.Error()
	}
	var h readmodel.Position
	if len(m.samples) > 0 {
		h = m.samples[len(m.samples)-1].heads
	}
	return fmt.Sprintf("applied state %d of %d, sales %d of %d", m.applied.State, h.State, m.applied.Sales, h.Sales)
}

// viewSource is one source's health as a node's views hold it: when its
// poll last succeeded (readmodel.Polled) and the poll statuses ingest
// published, per (source, collection). A collection of a per-collection
// source carries a status only once its poll failed for it: a failure,
// or the recovery after one.
type viewSource struct {
	Source       string    `json:"source"`
	Healthy      bool      `json:"healthy"`               // every status of it is ok
	LastSuccess  time.Time `json:"lastSuccess,omitzero"`  // its poll's last success, or the newest lastGoodAt if later
	FailingSince time.Time `json:"failingSince,omitzero"` // oldest failingSince of a failing status
	ErrorClass   string    `json:"errorClass,omitempty"`  // class of a failing status
	Subjects     int       `json:"subjects"`              // statuses held (collections that failed, or 1 for a source-wide poll)
	Failing      int       `json:"failing"`               // of which failing
	From         string    `json:"from"`                  // "views"
}

// sourcesFromViews aggregates the poll times and statuses in p's views by
// source.
func sourcesFromViews(ctx context.Context, p *healer) ([]viewSource, error) {
	by := map[readmodel.Source]*viewSource{}
	entry := func(src readmodel.Source) *viewSource {
		v := by[src]
		if v == nil {
			v = &viewSource{Source: string(src), Healthy: true, From: "views"}
			by[src] = v
		}
		return v
	}
	pt := p.PollTimes(ctx)
	for _, src := range readmodel.Sources {
		if i := readmodel.PollIndex(string(src)); i >= 0 && pt[i] > 0 {
			entry(src).LastSuccess = time.UnixMilli(pt[i]).UTC()
		}
	}
	err := p.EachPollStatus(ctx, func(src readmodel.Source, _ string, st readmodel.PollStatus) error {
		v := entry(src)
		v.Subjects++
		if st.LastGoodAt.After(v.LastSuccess) {
			v.LastSuccess = st.LastGoodAt
		}
		if !st.OK {
			v.Healthy = false
			v.Failing++
			v.ErrorClass = st.ErrorClass
			if v.FailingSince.IsZero() || st.FailingSince.Before(v.FailingSince) {
				v.FailingSince = st.FailingSince
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	out := make([]viewSource, 0, len(by))
	for _, v := range by {
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out, nil
}

// leaseState is who holds the ingest lease: this node's own view when it
// takes part, else the bucket's.
func (a *admin) leaseState(ctx context.Context) (*bus.LeaseState, error) {
	if a.lease != nil {
		s := a.lease.State()
		return &s, nil
	}
	if a.js == nil {
		return nil, nil
	}
	s, err := bus.ReadLease(ctx, a.js)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// leaseCollector exposes who holds the ingest lease.
type leaseCollector struct {
	a            *admin
	held, holder *prometheus.Desc
}

func registerLeaseMetrics(reg *prometheus.Registry, a *admin, node string) {
	reg.MustRegister(&leaseCollector{a: a,
		held: prometheus.NewDesc("marketd_ingest_lease_held", "1 when this node holds the ingest lease (polls and publishes), 0 when it stands by.",
			nil, prometheus.Labels{"node": node}),
		holder: prometheus.NewDesc("marketd_ingest_lease_holder", "The node that holds the ingest lease, as this node last saw it (value 1).", []string{"holder"}, nil),
	})
}

func (c *leaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.held; ch <- c.holder }

func (c *leaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := c.a.leaseState(ctx)
	if err != nil || s == nil {
		return
	}
	if c.a.lease != nil {
		v := 0.0
		if s.Held {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, v)
	}
	if s.Holder != "" {
		ch <- prometheus.MustNewConstMetric(c.holder, prometheus.GaugeValue, 1, s.Holder)
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

// purgeState removes every message of the state stream (see
// admin.RunFullIngest).
func purgeState(ctx context.Context, js jetstream.JetStream, log zerolog.Logger) error {
	s, err := js.Stream(ctx, bus.StateStream)
	if err != nil {
		return fmt.Errorf("purge %s: %w", bus.StateStream, err)
	}
	if err := s.Purge(ctx); err != nil {
		return fmt.Errorf("purge %s: %w", bus.StateStream, err)
	}
	log.Warn().Str("stream", bus.StateStream).Msg("state stream purged; the full cycle publishes every subject again")
	return nil
}
