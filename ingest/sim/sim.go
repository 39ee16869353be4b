package sim

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// Edge-case names (see the package doc for their fixed indexes).
const (
	EdgeLegacySolanaIDs = "legacy-solana-ids"
	EdgeDualListed      = "dual-listed"
	EdgeMirrorLag       = "mirror-lag"
	EdgeNoContract      = "no-contract"
	EdgeChainMissing    = "chain-missing"
	EdgeChainUnknown    = "chain-unknown"
	EdgeNoListings      = "no-listings"
	EdgeManyListings    = "many-listings"
	EdgeBadSalePrices   = "bad-sale-prices"
	EdgeLegacySales     = "legacy-sales"
	EdgeEscrowNoSeller  = "escrow-no-seller"
	EdgeSameAddressA    = "same-address-a"
	EdgeSameAddressB    = "same-address-b"
	EdgePolygon         = "polygon"
	EdgeApeChain        = "apechain"
	EdgeExpiring        = "expiring"
)

var edgeOrder = []string{
	EdgeLegacySolanaIDs, EdgeDualListed, EdgeMirrorLag, EdgeNoContract, EdgeChainMissing, EdgeChainUnknown,
	EdgeNoListings, EdgeManyListings, EdgeBadSalePrices, EdgeLegacySales, EdgeEscrowNoSeller,
	EdgeSameAddressA, EdgeSameAddressB, EdgePolygon, EdgeApeChain, EdgeExpiring,
}

const idxSameAddressA = 11

func edgeAt(c int) string {
	if c >= 0 && c < len(edgeOrder) {
		return edgeOrder[c]
	}
	return ""
}

// Options configure a simulator. Zero values take the defaults noted.
type Options struct {
	Seed                uint64        // default 1
	Collections         int           // default 300
	TokensPerCollection int           // 0: varied, 20–400 per collection
	ListingRatio        float64       // share of tokens listed; default 0.3
	SalesDepth          int           // years of sales history; default 3
	Anchor              time.Time     // time of tick 0; default now truncated to the minute
	Step                time.Duration // simulated time per tick; default 2m
	TickEvery           time.Duration // > 0: Open starts ticking on this period
}

// Mode is a source's fault mode.
type Mode string

const (
	ModeOK      Mode = "ok"
	ModeError   Mode = "error"
	ModeTimeout Mode = "timeout"
)

// Sim is the upstream simulator. Its methods are safe for concurrent use.
type Sim struct {
	m       market
	opts    Options
	tick    atomic.Int64
	mu      sync.Mutex
	faults  map[readmodel.Source]Mode
	closing chan struct{}
	closed  sync.Once

	runMu  sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a simulator at tick 0.
func New(opts Options) *Sim {
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.Collections <= 0 {
		opts.Collections = 300
	}
	if opts.ListingRatio <= 0 || opts.ListingRatio > 1 {
		opts.ListingRatio = 0.3
	}
	if opts.SalesDepth == 0 {
		opts.SalesDepth = 3
	}
	if opts.SalesDepth < 0 {
		opts.SalesDepth = 0
	}
	if opts.Anchor.IsZero() {
		opts.Anchor = time.Now().UTC().Truncate(time.Minute)
	}
	if opts.Step <= 0 {
		opts.Step = 2 * time.Minute
	}
	s := &Sim{opts: opts, closing: make(chan struct{}), faults: map[readmodel.Source]Mode{}}
	s.m = market{
		seed: opts.Seed, n: opts.Collections, tokens: opts.TokensPerCollection, ratio: opts.ListingRatio,
		depthYears: opts.SalesDepth, anchor: opts.Anchor.UTC(), step: opts.Step,
		externalMPs: []string{"opensea", "blur", "magic-eden", "tensor", "looks-rare"},
	}
	s.m.escrow = EscrowWallet
	for _, src := range readmodel.Sources {
		s.faults[src] = ModeOK
	}
	return s
}

// EscrowWallet is the shared platform escrow wallet on Solana: native
// Solana listings move the asset here. It must never be shown as a user.
const EscrowWallet = "EscrowMarketd1111111111111111111111111111111"

// Options returns the effective options (defaults filled in).
func (s *Sim) Options() Options { return s.opts }

// Open starts the ticker when TickEvery > 0. It returns at once.
func (s *Sim) Open(ctx context.Context) error {
	if s.opts.TickEvery <= 0 {
		return nil
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.cancel != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.opts.TickEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.Tick()
			}
		}
	}()
	return nil
}

// Close stops the ticker and releases every request held by a timeout
// fault; it waits for the ticker to stop. The handler keeps answering
// (without holding requests) after Close.
func (s *Sim) Close(ctx context.Context) error {
	s.closed.Do(func() { close(s.closing) })
	s.runMu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel = nil
	s.runMu.Unlock()
	if cancel != nil {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Tick advances the market one step and returns the new tick.
func (s *Sim) Tick() int { return int(s.tick.Add(1)) }

// Ticks is the current tick.
func (s *Sim) Ticks() int { return int(s.tick.Load()) }

// Now is the simulated time of the current tick.
func (s *Sim) Now() time.Time { return s.m.timeOf(s.tick.Load()) }

// SetFault sets src's fault mode.
func (s *Sim) SetFault(src readmodel.Source, mode Mode) {
	s.mu.Lock()
	s.faults[src] = mode
	s.mu.Unlock()
}

func (s *Sim) fault(src readmodel.Source) Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults[src]
}

// EdgeCases maps each edge-case name to its collection id (only those whose
// index exists in this simulator).
func (s *Sim) EdgeCases() map[string]string {
	out := map[string]string{}
	for i, name := range edgeOrder {
		if i < s.opts.Collections {
			k := s.m.coll(i)
			out[name] = k.id
		}
	}
	return out
}

// CollectionID is the document id of collection index c.
func (s *Sim) CollectionID(c int) string { k := s.m.coll(c); return k.id }
