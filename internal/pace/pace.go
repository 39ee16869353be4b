// Package pace makes a node's background work (ingest, the projector) give
// way to the reads it serves when both share the same cores.
//
// Why it is needed: a background goroutine that yields with
// runtime.Gosched goes to the back of the run queue and is picked again
// before the Go scheduler looks at the network, which it does on its own
// only when it runs out of work, or every 10 ms from its monitor thread.
// With the node on one core and a cycle being applied, a read that arrives
// therefore waits for one of those 10 ms polls: at 10,000 collections a
// listings read during a cycle had a p99 of 120–130 ms and 2,000–2,300
// reads a second got through, against 2.8 ms and 68,000 idle (2026-11-26,
// GOMAXPROCS 1). More threads than cores (GOMAXPROCS 2 on one core) did
// not help: 85–145 ms, and idle reads lost a third of their rate.
//
// A Gate divides time into periods of Work followed by Pause. While reads
// keep arriving, background goroutines that call Yield inside a pause
// sleep until it ends; with all of them asleep the scheduler runs out of
// work, polls the network and runs the reads. Outside a pause, or with no
// read in the last ActiveFor, Yield is runtime.Gosched: a node that is not
// being read applies at full speed. Background work then gets at least
// Work/(Work+Pause) of the time while reads last.
package pace

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Defaults of a Gate: background work gets two thirds of the time while
// reads arrive, and a read waits about a period at most for the network
// poll. A pause below a millisecond would not be shorter: the scheduler
// sleeps for timers in whole milliseconds when it has nothing else to run.
const (
	DefaultWork      = 2 * time.Millisecond
	DefaultPause     = time.Millisecond
	DefaultActiveFor = 20 * time.Millisecond
)

// Gate paces background work against reads. Request and Yield are safe
// for concurrent use; a nil *Gate's Yield is runtime.Gosched and its
// Request does nothing.
type Gate struct {
	epoch     time.Time
	work      int64 // ns of a period's work phase
	period    int64 // ns of work plus pause
	activeFor int64

	requests    atomic.Uint64 // reads begun
	seen        atomic.Uint64 // requests as of the last look
	activeUntil atomic.Int64  // ns since epoch until which reads count as arriving
	paused      atomic.Int64  // ns Yield slept, in all
	pauses      atomic.Int64  // times Yield slept

	since func() int64        // ns since epoch (tests replace it)
	sleep func(time.Duration) // time.Sleep (tests replace it)
}

// New returns a Gate with periods of work then pause, reads counting as
// arriving for activeFor after the last one. Zero durations take the
// defaults.
func New(work, pause, activeFor time.Duration) *Gate {
	if work <= 0 {
		work = DefaultWork
	}
	if pause <= 0 {
		pause = DefaultPause
	}
	if activeFor <= 0 {
		activeFor = DefaultActiveFor
	}
	g := &Gate{epoch: time.Now(), work: int64(work), period: int64(work + pause), activeFor: int64(activeFor), sleep: time.Sleep}
	g.since = func() int64 { return int64(time.Since(g.epoch)) }
	return g
}

// Request notes that a read arrived. It is one atomic add: the read path
// calls it for every request.
func (g *Gate) Request() {
	if g != nil {
		g.requests.Add(1)
	}
}

// Yield is called by background work between two units of it (a message,
// a collection, an upstream page). Inside a pause, while reads arrive, it
// sleeps until the pause ends; otherwise it lets waiting goroutines run
// first (runtime.Gosched) and returns.
func (g *Gate) Yield() {
	if g == nil {
		runtime.Gosched()
		return
	}
	now := g.since()
	phase := now % g.period
	if phase < g.work || !g.reading(now) {
		runtime.Gosched()
		return
	}
	g.sleep(time.Duration(g.period - phase))
	g.pauses.Add(1)
	g.paused.Add(g.since() - now)
}

// reading says whether reads are arriving: one arrived since the last
// look (looks are made in pauses only), or within activeFor of a look that
// saw one. Two goroutines may both see a new count and both extend the
// window; either time is right.
func (g *Gate) reading(now int64) bool {
	if r := g.requests.Load(); r != g.seen.Load() {
		g.seen.Store(r)
		g.activeUntil.Store(now + g.activeFor)
		return true
	}
	return now < g.activeUntil.Load()
}

// Stats is what a Gate has done since New.
type Stats struct {
	Requests uint64        // reads noted
	Pauses   int64         // times Yield slept
	Paused   time.Duration // time Yield slept, summed over goroutines
}

// Stats returns the Gate's counters (zero for a nil Gate).
func (g *Gate) Stats() Stats {
	if g == nil {
		return Stats{}
	}
	return Stats{Requests: g.requests.Load(), Pauses: g.pauses.Load(), Paused: time.Duration(g.paused.Load())}
}
