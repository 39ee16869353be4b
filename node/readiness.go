package node

import (
	"sync"
	"sync/atomic"
)

// Readiness says whether a node serves current data (/readyz) and, when
// it does not, why. The parts a role runs add what they require of it:
// Require, checks made every time in the order added (the bus reachable,
// the views whole, the ingest lease), Until, the reason given until the
// node is first ready (MarkReady), and RequireServing, checks made once it
// was (the views keep up with the streams). A check returns why the node
// is not ready, "" when it has no objection. Safe for concurrent use.
type Readiness struct {
	onReady func()
	ready   atomic.Bool

	mu      sync.Mutex
	always  []func() string
	until   func() string
	serving []func() string
}

// NewReadiness returns a Readiness that is not ready until MarkReady, and
// calls onReady (nil: nothing) the first time the node is marked ready.
func NewReadiness(onReady func()) *Readiness {
	return &Readiness{onReady: onReady, until: func() string { return "starting" }}
}

// Require adds checks made on every answer, after those added before.
func (r *Readiness) Require(checks ...func() string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.always = append(r.always, checks...)
}

// RequireServing adds checks made once the node was first ready.
func (r *Readiness) RequireServing(checks ...func() string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.serving = append(r.serving, checks...)
}

// Until sets why the node is not yet ready until MarkReady ("starting"
// when never set).
func (r *Readiness) Until(reason func() string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.until = reason
}

// MarkReady records that the node is first ready: its first ingest cycle
// is published or projected, or its views caught up with the streams. The
// first time, it calls onReady.
func (r *Readiness) MarkReady() {
	if !r.ready.Swap(true) && r.onReady != nil {
		r.onReady()
	}
}

// Marked reports whether MarkReady was called.
func (r *Readiness) Marked() bool { return r.ready.Load() }

// Ready reports whether the node is ready now.
func (r *Readiness) Ready() bool { ok, _ := r.Readiness(); return ok }

// Readiness reports whether the node is ready now and, when not, the
// first objection: a check of Require, the Until reason before MarkReady,
// then a check of RequireServing.
func (r *Readiness) Readiness() (bool, string) {
	r.mu.Lock()
	always, until, serving := r.always, r.until, r.serving
	r.mu.Unlock()
	for _, check := range always {
		if reason := check(); reason != "" {
			return false, reason
		}
	}
	if !r.ready.Load() {
		return false, until()
	}
	for _, check := range serving {
		if reason := check(); reason != "" {
			return false, reason
		}
	}
	return true, ""
}

// Fixed is a reason that does not change, for Until.
func Fixed(reason string) func() string { return func() string { return reason } }
