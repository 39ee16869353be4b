package bus

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/marketd/marketd/readmodel"
)

// LeaseBucket is the JetStream key-value bucket of the ingest lease.
const LeaseBucket = "MARKETD_LEASE"

// IngestLeaseKey is the key the active ingest holds.
const IngestLeaseKey = "ingest"

// LeaseOptions configures OpenLease.
type LeaseOptions struct {
	// Holder names this process (unique in the tier). Required.
	Holder string
	// Period is the lease period: the bucket's TTL, and how long a
	// standby waits on a holder that stopped renewing before it takes
	// over. 0 means 10 s.
	Period time.Duration
	// Replicas of the bucket's stream (as the data streams). 0 means 1.
	Replicas int
	// OnChange is called (from Run's goroutine, never concurrently) when
	// this process gains or loses the lease, or the holder it sees
	// changes. It must not block.
	OnChange func(LeaseState)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// LeaseState is what a Lease knows.
type LeaseState struct {
	Held     bool   `json:"held"`     // this process holds the lease and may publish
	Holder   string `json:"holder"`   // who holds it as last seen ("" none)
	Revision uint64 `json:"revision"` // the key's revision as last seen
	Term     uint64 `json:"term"`     // how many times this process acquired it
	Node     string `json:"node"`     // this process
}

// Lease is the ingest lease, held in a JetStream key-value bucket so that
// of several `marketd ingest` processes exactly one polls and publishes.
//
// The holder renews the key every Period/4 with a compare-and-set on the
// revision it wrote last (kv.Update). A standby takes the key over when
// it is gone (the bucket's TTL, one Period after the last renewal, or the
// holder released it on shutdown: kv.Create), or when it has seen the
// same revision for 7/10 of a Period (a holder that stopped renewing:
// kv.Update on that revision, so of two standbys exactly one wins). With
// a standby looking every Period/10, a holder that dies is replaced at
// most 9/10 of a Period after its last renewal: within one Period of
// dying.
//
// Fencing: the holder counts itself holder only until the time it sent
// its last successful renewal plus Period*3/5. A standby counts its
// 7/10 from when it first saw that renewal's revision, which is after
// it was written, so the old holder stops (Held turns false, and ingest
// refuses to publish) before any standby can take over, without relying
// on synchronized clocks. Check adds a read of the key before each
// publish batch.
type Lease struct {
	kv       jetstream.KeyValue
	holder   []byte
	period   time.Duration
	now      func() time.Time
	onChange func(LeaseState)

	mu         sync.Mutex
	rev        uint64    // the revision we wrote last while holding it
	validUntil time.Time // Held is true before it
	term       uint64
	seen       LeaseState // the key as last read
	seenSince  time.Time  // when seen.Revision was first seen (standby's timer)
	released   bool
}

// OpenLease creates (or binds to) the lease bucket. It does not acquire
// the lease: Run does. Errors are UpstreamError *readmodel.Error values.
func OpenLease(ctx context.Context, js jetstream.JetStream, opts LeaseOptions) (*Lease, error) {
	if opts.Holder == "" {
		return nil, readmodel.Errorf(readmodel.BadRequest, "lease: holder name required")
	}
	if opts.Period <= 0 {
		opts.Period = 10 * time.Second
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cfg := jetstream.KeyValueConfig{
		Bucket:      LeaseBucket,
		Description: "marketd ingest lease: the key names the ingest that polls",
		TTL:         opts.Period,
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    opts.Replicas,
	}
	// A cluster that is still electing the bucket's leader (all servers
	// just restarted) answers nothing for a few seconds: retry as a
	// publish does (publisher.go) instead of failing the node's start.
	var (
		kv     jetstream.KeyValue
		err    error
		giveUp = time.Now().Add(retryBudget)
	)
	for backoff := retryFirst; ; backoff = min(2*backoff, retryMax) {
		if kv, err = js.CreateOrUpdateKeyValue(ctx, cfg); err == nil || ctx.Err() != nil || !time.Now().Before(giveUp) {
			break
		}
		pause(ctx, min(backoff, time.Until(giveUp)))
	}
	if err != nil {
		return nil, readmodel.Wrap(readmodel.UpstreamError, err, "lease bucket: "+err.Error())
	}
	return &Lease{kv: kv, holder: []byte(opts.Holder), period: opts.Period, now: opts.Now, onChange: opts.OnChange}, nil
}

// holdSpan is how long after sending its last successful renewal the
// holder counts itself holder: 3/5 of a Period.
func (l *Lease) holdSpan() time.Duration { return l.period * 3 / 5 }

// takeoverSpan is how long a standby must see one revision unchanged
// before it takes the key over: 7/10 of a Period. The tenth between the
// two spans is the fence; a standby's looks every Period/10 put a dead
// holder's replacement at most 9/10 of a Period after its last renewal.
func (l *Lease) takeoverSpan() time.Duration { return l.period * 7 / 10 }

// Period is the lease period.
func (l *Lease) Period() time.Duration { return l.period }

// Held reports whether this process holds the lease now (by its own
// clock; see the type's comment).
func (l *Lease) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.released && l.now().Before(l.validUntil)
}

// Term counts this process's acquisitions: a new term means another
// process may have published since this one last did.
func (l *Lease) Term() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term
}

// State returns what the lease knows now.
func (l *Lease) State() LeaseState {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen
	s.Held = !l.released && l.now().Before(l.validUntil)
	s.Term, s.Node = l.term, string(l.holder)
	return s
}

// Check reads the key and fails unless this process holds the lease: the
// fence before a publish batch. The error is a Conflict... it is an
// UpstreamError *readmodel.Error either way, saying who holds it.
func (l *Lease) Check(ctx context.Context) error {
	if !l.Held() {
		return readmodel.Errorf(readmodel.UpstreamError, "ingest lease not held by %s (holder %q)", l.holder, l.State().Holder)
	}
	e, err := l.kv.Get(ctx, IngestLeaseKey)
	if err != nil {
		return readmodel.Wrap(readmodel.UpstreamError, err, "ingest lease: read: "+err.Error())
	}
	if !bytes.Equal(e.Value(), l.holder) {
		l.lost(e.Revision(), string(e.Value()))
		return readmodel.Errorf(readmodel.UpstreamError, "ingest lease taken over by %q (revision %d)", e.Value(), e.Revision())
	}
	return nil
}

// Run acquires, renews and (when ctx ends) releases the lease until ctx
// ends. A holder renews every Period/4; a standby looks every Period/10.
func (l *Lease) Run(ctx context.Context) {
	for {
		l.Step(ctx)
		wait := l.period / 10
		if l.Held() {
			wait = l.period / 4
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Step makes one attempt: renew when held, else try to acquire. Tests
// drive it directly; Run calls it on its schedule.
func (l *Lease) Step(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, max(l.period/4, time.Second))
	defer cancel()
	sent := l.now()
	l.mu.Lock()
	held, rev, released := !l.released && sent.Before(l.validUntil), l.rev, l.released
	l.mu.Unlock()
	if released {
		return
	}
	if held || rev != 0 {
		if nrev, err := l.kv.Update(cctx, IngestLeaseKey, l.holder, rev); err == nil {
			l.won(sent, nrev, false)
			return
		}
	}
	e, err := l.kv.Get(cctx, IngestLeaseKey)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		if nrev, err := l.kv.Create(cctx, IngestLeaseKey, l.holder); err == nil {
			l.won(sent, nrev, true)
			return
		}
		l.lost(0, "")
	case err != nil:
		l.expireIfHeld() // cannot reach the bus: Held lapses on its own clock
	case bytes.Equal(e.Value(), l.holder):
		// Ours: a renewal whose answer was lost, or this node restarted.
		if nrev, err := l.kv.Update(cctx, IngestLeaseKey, l.holder, e.Revision()); err == nil {
			l.won(sent, nrev, rev == 0 || !held)
			return
		}
	default:
		if l.stale(e.Revision(), string(e.Value())) {
			if nrev, err := l.kv.Update(cctx, IngestLeaseKey, l.holder, e.Revision()); err == nil {
				l.won(sent, nrev, true)
			}
		}
	}
}

// Release deletes the key when this process holds it, so a standby takes
// over at its next look instead of a Period later, and stops renewing.
//
// The key may be at a later revision than the one this process last
// wrote and still be its own: a renewal that the server applied but whose
// answer was lost (cut off by the shutdown that stops Run, or timed out).
// The delete then reads the key again and deletes that revision; a key
// another process took over is left alone (nil: nothing of ours to
// release).
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	held, rev := !l.released && l.now().Before(l.validUntil), l.rev
	l.released, l.validUntil = true, time.Time{}
	l.mu.Unlock()
	if !held {
		return nil
	}
	for attempt := 1; ; attempt++ {
		err := l.kv.Delete(ctx, IngestLeaseKey, jetstream.LastRevision(rev))
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || attempt == 3 {
			return readmodel.Wrap(readmodel.UpstreamError, err, "ingest lease: release: "+err.Error())
		}
		e, err := l.kv.Get(ctx, IngestLeaseKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return readmodel.Wrap(readmodel.UpstreamError, err, "ingest lease: release: read: "+err.Error())
		}
		if !bytes.Equal(e.Value(), l.holder) {
			return nil
		}
		rev = e.Revision()
	}
}

func (l *Lease) won(sent time.Time, rev uint64, acquired bool) {
	l.mu.Lock()
	was := l.seen
	wasHeld := l.now().Before(l.validUntil)
	if acquired || !wasHeld {
		l.term++
	}
	l.rev, l.validUntil = rev, sent.Add(l.holdSpan())
	l.seen = LeaseState{Holder: string(l.holder), Revision: rev}
	l.seenSince = l.now()
	s := l.stateLocked()
	l.mu.Unlock()
	if !wasHeld || was.Holder != s.Holder {
		l.notify(s)
	}
}

// lost records that another holder (or none) has the key.
func (l *Lease) lost(rev uint64, holder string) {
	l.mu.Lock()
	wasHeld := l.now().Before(l.validUntil)
	changed := l.seen.Holder != holder || wasHeld
	l.rev, l.validUntil = 0, time.Time{}
	if l.seen.Revision != rev || l.seen.Holder != holder {
		l.seen, l.seenSince = LeaseState{Holder: holder, Revision: rev}, l.now()
	}
	s := l.stateLocked()
	l.mu.Unlock()
	if changed {
		l.notify(s)
	}
}

// stale records the key as seen by a standby and reports whether its
// revision has not moved for takeoverSpan.
func (l *Lease) stale(rev uint64, holder string) bool {
	l.lost(rev, holder)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now().Sub(l.seenSince) >= l.takeoverSpan()
}

func (l *Lease) expireIfHeld() {
	l.mu.Lock()
	lapsed := !l.validUntil.IsZero() && !l.now().Before(l.validUntil)
	if lapsed {
		l.validUntil = time.Time{}
	}
	s := l.stateLocked()
	l.mu.Unlock()
	if lapsed {
		l.notify(s)
	}
}

func (l *Lease) stateLocked() LeaseState {
	s := l.seen
	s.Held = !l.released && l.now().Before(l.validUntil)
	s.Term, s.Node = l.term, string(l.holder)
	return s
}

func (l *Lease) notify(s LeaseState) {
	if l.onChange != nil {
		l.onChange(s)
	}
}

// ReadLease returns the ingest lease's holder as the bucket says, for
// nodes that do not take part (serve): zero when nobody holds it or the
// bucket does not exist yet.
func ReadLease(ctx context.Context, js jetstream.JetStream) (LeaseState, error) {
	kv, err := js.KeyValue(ctx, LeaseBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return LeaseState{}, nil
	}
	if err != nil {
		return LeaseState{}, readmodel.Wrap(readmodel.UpstreamError, err, "lease bucket: "+err.Error())
	}
	e, err := kv.Get(ctx, IngestLeaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return LeaseState{}, nil
	}
	if err != nil {
		return LeaseState{}, readmodel.Wrap(readmodel.UpstreamError, err, "ingest lease: read: "+err.Error())
	}
	return LeaseState{Holder: string(e.Value()), Revision: e.Revision()}, nil
}
