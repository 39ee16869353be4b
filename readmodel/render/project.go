package render

import (
	"bytes"
	"encoding/json"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// This file holds the pure view-building functions the projector uses: they
// turn normalized rows into the JSON bodies of SPEC §2. They read no clock
// and no storage; every input is a parameter. They are safe for concurrent
// use.

// PriceOf builds the Price of raw base units on c. ok is false when raw
// cannot be interpreted (then the value must be dropped, never served).
func PriceOf(c readmodel.Chain, raw string, usd *float64) (p readmodel.Price, ok bool) {
	// ParseRaw's rule without the big.Int: every row rendered comes here.
	if raw == "" || len(raw) > readmodel.MaxRawDigits {
		return readmodel.Price{}, false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return readmodel.Price{}, false
		}
	}
	canon := strings.TrimLeft(raw, "0")
	if canon == "" {
		canon = "0"
	}
	return newPrice(c, canon, usd), true
}

func pricePtr(c readmodel.Chain, raw string, usd *float64) *readmodel.Price {
	if raw == "" {
		return nil
	}
	p, ok := PriceOf(c, raw, usd)
	if !ok {
		return nil
	}
	return &p
}

// ListingItem renders a listing row as the MarketItem of a listings feed.
// observedAt stands in for a missing row timestamp. ok is false when the
// row's price cannot be interpreted.
func ListingItem(r *readmodel.ListingRow, usd *float64, observedAt time.Time) (readmodel.MarketItem, bool) {
	p, ok := PriceOf(r.Chain, r.PriceRaw, usd)
	if !ok {
		return readmodel.MarketItem{}, false
	}
	return r.Item(p, observedAt), true
}

// SaleItem renders a sale row as a MarketItem. ok is false when the sale's
// price cannot be interpreted: such sales are dropped at projection.
func SaleItem(s *readmodel.SaleRow, usd *float64) (readmodel.MarketItem, bool) {
	p, ok := PriceOf(s.Chain, s.PriceRaw, usd)
	if !ok {
		return readmodel.MarketItem{}, false
	}
	return s.Item(p), true
}

// AppendSaleItem appends sale row s's item as a sales page serves it: the
// bytes of MarshalItem(SaleItem(s, nil)) with its usd slot (TemplateUSD)
// filled from q as AppendUSD fills it. ok is false, and dst is returned
// as is, when the sale's price cannot be interpreted. The store renders
// sales pages from their records with it.
//
// It renders the filled usd directly (USDQuote.slotValue: the value the
// slot would take) instead of templating and filling: TemplateUSD parses
// the decimal back from the JSON, and was a third of rendering an item.
func AppendSaleItem(dst []byte, s *readmodel.SaleRow, q *USDQuote) ([]byte, bool) {
	it, ok := SaleItem(s, nil)
	if !ok {
		return dst, false
	}
	start := len(dst)
	filled := it
	filled.Price.USD = q.slotValue(&it.Price)
	if b, ok := appendItem(dst, &filled); ok {
		return b, true
	}
	// Only a price that does not encode gets here: the way the projector
	// rendered it, then filled.
	return AppendUSD(dst[:start], TemplateUSD(MarshalItem(it)), q), true
}

// MarshalItem encodes v as compact JSON, as encoding/json does. Every value
// this package renders is plain data, so encoding cannot fail; a failure
// yields "null". Market items and token details, rendered once per row the
// projector applies, are written by hand-written appenders (encode.go).
func MarshalItem(v any) []byte {
	var (
		b  []byte
		ok bool
	)
	switch x := v.(type) {
	case readmodel.MarketItem:
		b, ok = appendItem(make([]byte, 0, 512), &x)
	case *readmodel.MarketItem:
		b, ok = appendItem(make([]byte, 0, 512), x)
	case wire.TokenDetail:
		b, ok = appendTokenDetail(make([]byte, 0, 1024), &x)
	case wire.ListingItem:
		b, ok = appendListingItem(make([]byte, 0, 1024), &x)
	}
	if ok {
		return b
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("null")
	}
	return b
}

// identity is the identity part shared by CollectionSummary and
// CollectionDetail.
func identity(d *readmodel.CollectionDoc) wire.CollectionIdentity {
	id := wire.CollectionIdentity{
		ID:              d.ID,
		ContractAddress: StrPtr(d.ContractAddress),
		Name:            d.Name,
		Slug:            StrPtr(d.Slug),
		Image:           StrPtr(d.Image),
		Banner:          StrPtr(d.Banner),
		Description:     StrPtr(d.Description),
		TokenStandard:   StrPtr(d.TokenStandard),
		RoyaltyBps:      d.RoyaltyBps,
	}
	if id.Name == "" {
		id.Name = d.ID
	}
	if d.Chain.Valid() {
		c := d.Chain
		id.Chain = &c
	}
	return id
}

// CollectionSummaryJSON renders the CollectionSummary of a browse page:
// stats.floor from the stored snapshot (none without a usable chain),
// volumeAllTime, supply and owners from the document.
func CollectionSummaryJSON(d *readmodel.CollectionDoc, usd *float64) []byte {
	s := wire.CollectionSummary{CollectionIdentity: identity(d)}
	if d.Chain.Valid() {
		s.Stats.Floor = pricePtr(d.Chain, d.FloorRaw, usd)
	}
	s.Stats.VolumeAllTime = d.VolumeAllTime
	s.Stats.Supply = d.Supply
	s.Stats.Owners = d.Owners
	return MarshalItem(s)
}

// DetailInputs is what a CollectionDetail is computed from. A nil Stats or
// Analytics means no answer is stored; the Failed flags are the latest poll
// outcomes of indexer-stats and analytics for the collection.
type DetailInputs struct {
	Doc             *readmodel.CollectionDoc
	Stats           *readmodel.CollectionStats
	StatsFailed     bool
	Analytics       *readmodel.Analytics
	AnalyticsFailed bool
	USD             *float64
	// Changes are the detail's change ratios (History.ChangesOf).
	Changes Changes
}

// CollectionDetailJSON renders CollectionDetail by SPEC's rules: floor from
// live analytics (when its poll is ok) else the stored snapshot; volume and
// sales windows null when analytics failed; owners and listedCount null when
// indexer-stats failed; supply from the document else the indexed count;
// stale only when both failed.
func CollectionDetailJSON(in DetailInputs) []byte {
	d := in.Doc
	out := wire.CollectionDetail{CollectionIdentity: identity(d)}
	an := in.Analytics
	if in.AnalyticsFailed {
		an = nil
	}
	st := in.Stats
	if in.StatsFailed {
		st = nil
	}
	out.Stats.Floor = detailFloor(in, in.USD)
	if an != nil {
		out.Stats.Volume = wire.Windows[float64]{AllTime: an.VolumeAllTime, SevenDay: an.Volume7d, TwentyFourHour: an.Volume24h}
		out.Stats.Sales = wire.Windows[int64]{AllTime: an.SalesAllTime, SevenDay: an.Sales7d, TwentyFourHour: an.Sales24h}
	}
	out.Stats.Supply = d.Supply
	if st != nil {
		if out.Stats.Supply == nil {
			out.Stats.Supply = st.IndexedCount
		}
		out.Stats.Owners = st.Owners
		if out.Stats.Owners == nil {
			out.Stats.Owners = d.Owners
		}
		out.Stats.ListedCount = st.ListedCount
	} else if !in.StatsFailed {
		out.Stats.Owners = d.Owners
	}
	out.Stats.Change = wire.Change{
		Volume: wire.ChangeWindows{TwentyFourHour: in.Changes.Volume24h, SevenDay: in.Changes.Volume7d},
		Floor:  wire.ChangeWindows{TwentyFourHour: in.Changes.Floor24h, SevenDay: in.Changes.Floor7d},
	}
	out.Stale = in.StatsFailed && in.AnalyticsFailed
	return MarshalItem(out)
}

// DetailSample is what a detail rendered from in shows, as a History
// sample at t: its floor (as CollectionDetailJSON chooses it) and its 24-hour
// and 7-day volumes (unknown while analytics fails).
func DetailSample(in DetailInputs, t time.Time) Sample {
	var floor *float64
	if p := detailFloor(in, nil); p != nil {
		floor = &p.Decimal
	}
	var v24, v7 *float64
	if in.Analytics != nil && !in.AnalyticsFailed {
		v24, v7 = in.Analytics.Volume24h, in.Analytics.Volume7d
	}
	return NewSample(t, floor, v24, v7)
}

// detailFloor is a detail's stats.floor: the live analytics floor when
// its poll is ok, else the stored snapshot; nil without a usable chain.
func detailFloor(in DetailInputs, usd *float64) *readmodel.Price {
	d := in.Doc
	if !d.Chain.Valid() {
		return nil
	}
	if in.Analytics != nil && !in.AnalyticsFailed && in.Analytics.FloorRaw != "" {
		if p := pricePtr(d.Chain, in.Analytics.FloorRaw, usd); p != nil {
			return p
		}
	}
	return pricePtr(d.Chain, d.FloorRaw, usd)
}

// ListingSource is one listing source's stored state for a collection.
type ListingSource struct {
	Rows       []readmodel.ListingRow
	ObservedAt time.Time
	// Failed is true when the source's latest poll for the collection
	// failed; LastGoodAt is then when it last answered well.
	Failed     bool
	LastGoodAt time.Time
}

// SnapshotInputs is what a listing snapshot is merged from.
type SnapshotInputs struct {
	// HasContract is false for a collection with no contract address or
	// collection mint: it contributes no native rows and order-book is stale.
	HasContract bool
	OrderBook   ListingSource
	Mirror      ListingSource
	// Now decides liveness (status active and unexpired) and whether a
	// failing source's last good rows are still within Retention of its
	// LastGoodAt.
	Now       time.Time
	Retention time.Duration
}

// Snapshot is a merged listing snapshot.
type Snapshot struct {
	Rows         []readmodel.ListingRow // deduplicated (native wins), live, sorted, at most ListingsCeiling
	StaleSources []readmodel.Source
	AllFailed    bool
	// MirrorCheapest is the cheapest live indexer-mirror row (askFloor's
	// second choice), nil when there is none.
	MirrorCheapest *readmodel.ListingRow
	// Deadline is the earliest future time at which the clock alone
	// changes what this snapshot serves in a way that skipping expired
	// rows at request time cannot reproduce (see MergeListings); zero when
	// none. Rows carry their own expiry, so an expiring row is a deadline
	// only when it is the floor's row or the mirror's cheapest, when it
	// hides a row of the same asset that outlives it, or when the
	// snapshot was cut at ListingsCeiling (a row beyond the cut moves in).
	// A failing source's rows aging out is always one.
	Deadline time.Time
	// Listed counts every live, deduplicated listing known, Rows and those
	// the ceiling cut; BeyondExpires holds the expiries (unix ms) of the
	// cut rows that have one, ascending, so a reader can count the cut
	// rows still live at its time.
	Listed        int
	BeyondExpires []int64
}

type sortedRow struct {
	row      *readmodel.ListingRow
	raw      *big.Int
	fromBook bool // a native row read from the order book itself
}

func lessRow(a, b sortedRow) bool {
	if c := a.raw.Cmp(b.raw); c != 0 {
		return c < 0
	}
	return a.row.OrderID < b.row.OrderID
}

// MergeListings merges the order book's and the mirror's rows for one
// collection by SPEC's listings rules: only live rows with interpretable
// prices; one row per asset key with the native order-book row winning
// (then the cheaper, then the smaller orderId, so the result never depends
// on input order); sorted by price (exact big-integer compare, which agrees
// with price.decimal) then orderId; capped at ListingsCeiling.
//
// Its rows serve until Deadline with the rows expired by request time
// skipped: for every now before Deadline, MergeListings at now yields
// exactly those rows, the same floor row and the same mirror cheapest.
// A projector therefore re-merges on the clock only at Deadline, not at
// every row's expiry.
func MergeListings(in SnapshotInputs) Snapshot {
	var snap Snapshot
	obStale := !in.HasContract || in.OrderBook.Failed
	if obStale {
		snap.StaleSources = append(snap.StaleSources, readmodel.SourceOrderBook)
	}
	if in.Mirror.Failed {
		snap.StaleSources = append(snap.StaleSources, readmodel.SourceIndexerMirror)
	}
	snap.AllFailed = obStale && in.Mirror.Failed

	note := func(t time.Time) {
		if t.After(in.Now) && (snap.Deadline.IsZero() || t.Before(snap.Deadline)) {
			snap.Deadline = t
		}
	}
	usable := func(s *ListingSource) bool {
		if !s.Failed {
			return true
		}
		until := s.LastGoodAt.Add(in.Retention)
		if s.LastGoodAt.IsZero() || !until.After(in.Now) {
			return false
		}
		note(until)
		return true
	}
	best := make(map[string]sortedRow)
	// outlived holds, per asset key, the latest expiry among the rows the
	// key's winner hides (forever: one of them never expires). When the
	// winner expires first, one of those takes its place.
	type hidden struct {
		until   time.Time
		forever bool
	}
	var outlived map[string]hidden
	hide := func(k string, r *readmodel.ListingRow) {
		if outlived == nil {
			outlived = make(map[string]hidden)
		}
		h := outlived[k]
		switch {
		case r.ExpiresAt == nil:
			h.forever = true
		case r.ExpiresAt.After(h.until):
			h.until = *r.ExpiresAt
		}
		outlived[k] = h
	}
	var mirrorCheapest *sortedRow
	add := func(s *ListingSource, native bool) {
		for i := range s.Rows {
			r := &s.Rows[i]
			if !r.Live(in.Now) {
				continue
			}
			raw, err := readmodel.ParseRaw(r.PriceRaw)
			if err != nil {
				continue
			}
			cand := sortedRow{row: r, raw: raw, fromBook: native && r.Native()}
			if !native {
				if mirrorCheapest == nil || lessRow(cand, *mirrorCheapest) {
					c := cand
					mirrorCheapest = &c
				}
			}
			k := r.AssetKey()
			cur, ok := best[k]
			switch {
			case !ok:
				best[k] = cand
			case cand.fromBook && !cur.fromBook:
				best[k] = cand
				hide(k, cur.row)
			case cur.fromBook && !cand.fromBook:
				hide(k, cand.row)
			case lessRow(cand, cur):
				best[k] = cand
				hide(k, cur.row)
			default:
				hide(k, cand.row)
			}
		}
	}
	expires := func(r *readmodel.ListingRow) {
		if r.ExpiresAt != nil {
			note(*r.ExpiresAt)
		}
	}
	if in.HasContract && usable(&in.OrderBook) {
		add(&in.OrderBook, true)
	}
	if usable(&in.Mirror) {
		add(&in.Mirror, false)
	}
	rows := make([]sortedRow, 0, len(best))
	for k, r := range best {
		rows = append(rows, r)
		if h, ok := outlived[k]; ok && r.row.ExpiresAt != nil && (h.forever || h.until.After(*r.row.ExpiresAt)) {
			expires(r.row)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return lessRow(rows[i], rows[j]) })
	snap.Listed = len(rows)
	if len(rows) > readmodel.ListingsCeiling {
		for _, r := range rows[readmodel.ListingsCeiling:] {
			if r.row.ExpiresAt != nil {
				snap.BeyondExpires = append(snap.BeyondExpires, r.row.ExpiresAt.UnixMilli())
			}
		}
		sort.Slice(snap.BeyondExpires, func(i, j int) bool { return snap.BeyondExpires[i] < snap.BeyondExpires[j] })
		rows = rows[:readmodel.ListingsCeiling]
		for _, r := range rows {
			expires(r.row)
		}
	}
	if len(rows) > 0 {
		expires(rows[0].row) // the floor's row
	}
	if mirrorCheapest != nil {
		expires(mirrorCheapest.row)
	}
	snap.Rows = make([]readmodel.ListingRow, len(rows))
	for i, r := range rows {
		snap.Rows[i] = *r.row
	}
	if mirrorCheapest != nil {
		c := *mirrorCheapest.row
		snap.MirrorCheapest = &c
	}
	return snap
}

// FloorInputs is what a FloorResponse is computed from.
type FloorInputs struct {
	CollectionID string
	Chain        readmodel.Chain
	RoyaltyBps   *int64 // nil: unknown (no royalty in buyerFloor, buyerPrice null)
	// AnalyticsFloorRaw is the live analytics floor ("" when analytics
	// failed or reported none); SnapshotFloorRaw the stored snapshot.
	AnalyticsFloorRaw string
	SnapshotFloorRaw  string
	Snapshot          Snapshot
	USD               *float64
	// LastGood is the persisted last-good buyer floor (raw) and when it was
	// computed; used only when both listing sources failed.
	LastGoodRaw string
	LastGoodAt  time.Time
}

// FloorResult is a rendered floor view plus the buyer floor to persist as
// last-good (BuyerRaw "" when none).
type FloorResult struct {
	Body          TimedBody
	FallbackAfter time.Time
	Fallback      TimedBody
	BuyerRaw      string
	// AskFrom is the source askFloor came from: analytics, indexer-mirror
	// or collection-index (the stored snapshot); "" when it is null.
	AskFrom readmodel.Source
	// AskRaw is askFloor's raw amount (canonical); "" when it is null.
	AskRaw string
}

// floorJSON writes r as the floor view's body (asOf null: the API
// writes it); "null" when a price cannot be written (a value
// encoding/json refuses).
func floorJSON(r *wire.FloorResponse) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		return []byte("null")
	}
	return b
}

// BuyerFloorRaw is the buyer all-in cost of filling row on chain c: native
// rows pay ask + platform fee + royalty; external rows their marketplace's
// buyer total, else ask + royalty. "" when the ask cannot be interpreted.
func BuyerFloorRaw(c readmodel.Chain, r *readmodel.ListingRow, royaltyBps int64) string {
	ask, err := readmodel.ParseRaw(r.PriceRaw)
	if err != nil {
		return ""
	}
	if r.Native() {
		return ApplyBps(ask, c.PlatformFeeBps()+royaltyBps).String()
	}
	if r.BuyerTotalRaw != "" {
		if bt, err := readmodel.ParseRaw(r.BuyerTotalRaw); err == nil {
			return bt.String()
		}
	}
	return ApplyBps(ask, royaltyBps).String()
}

// FloorJSON renders FloorResponse: askFloor falls back from analytics to
// the cheapest mirror row to the stored snapshot; buyerFloor comes from the
// cheapest merged row. When both listing sources failed, chains that keep a
// last-good buyer floor serve it with stale: true until it is
// LastGoodBuyerFloorAge old (then Fallback, with a null buyerFloor); other
// chains serve null with stale: false.
func FloorJSON(in FloorInputs) FloorResult {
	c := in.Chain
	resp := wire.FloorResponse{CollectionID: in.CollectionID, Aggregated: true, UpdatedAt: slotMark}
	var res FloorResult
	resp.AskFloor = pricePtr(c, in.AnalyticsFloorRaw, in.USD)
	if resp.AskFloor != nil {
		res.AskFrom = readmodel.SourceAnalytics
	}
	if resp.AskFloor == nil && in.Snapshot.MirrorCheapest != nil {
		resp.AskFloor = pricePtr(c, in.Snapshot.MirrorCheapest.PriceRaw, in.USD)
		if resp.AskFloor != nil {
			res.AskFrom = readmodel.SourceIndexerMirror
		}
	}
	if resp.AskFloor == nil {
		resp.AskFloor = pricePtr(c, in.SnapshotFloorRaw, in.USD)
		if resp.AskFloor != nil {
			res.AskFrom = readmodel.SourceCollectionIndex
		}
	}
	if resp.AskFloor != nil {
		res.AskRaw = resp.AskFloor.Raw
	}
	var royalty int64
	if in.RoyaltyBps != nil {
		royalty = *in.RoyaltyBps
	}
	if !in.Snapshot.AllFailed {
		if len(in.Snapshot.Rows) > 0 {
			row := &in.Snapshot.Rows[0]
			res.BuyerRaw = BuyerFloorRaw(c, row, royalty)
			resp.BuyerFloor = pricePtr(c, res.BuyerRaw, in.USD)
			if f, ok := FeesOf(c, row, in.RoyaltyBps, in.USD); ok {
				list, buyer := f.wire()
				resp.Fees, resp.BuyerPrice = list[:], buyer
			}
		}
		res.Body = splitSlot(floorJSON(&resp), updatedAtKey)
		return res
	}
	if c.KeepsLastGoodBuyerFloor() && in.LastGoodRaw != "" && !in.LastGoodAt.IsZero() {
		if p := pricePtr(c, in.LastGoodRaw, in.USD); p != nil {
			stale := resp
			stale.BuyerFloor, stale.Stale = p, true
			res.Body = splitSlot(floorJSON(&stale), updatedAtKey)
			res.FallbackAfter = in.LastGoodAt.Add(LastGoodBuyerFloorAge)
			res.Fallback = splitSlot(floorJSON(&resp), updatedAtKey)
			return res
		}
	}
	res.Body = splitSlot(floorJSON(&resp), updatedAtKey)
	return res
}

// slotMark is the placeholder written where a TimedBody's slot goes.
const slotMark = "\x00slot\x00"

var (
	updatedAtKey = []byte(`"updatedAt":"`)
	timestampKey = []byte(`"timestamp":"`)
	slotJSON     = []byte(`\u0000slot\u0000"`)
)

// splitSlot cuts b around the slot value that follows key. The key pattern
// `"name":"` cannot occur inside a JSON string (an unescaped quote after a
// colon), so the first match is the field itself.
func splitSlot(b []byte, key []byte) TimedBody {
	i := bytes.Index(b, key)
	if i < 0 || !bytes.HasPrefix(b[i+len(key):], slotJSON) {
		return TimedBody{Head: b}
	}
	head := b[:i+len(key)]
	tail := b[i+len(key)+len(slotJSON)-1:] // keep the closing quote
	return TimedBody{Head: head, Tail: tail, Timed: true}
}

// TokenInputs is what a TokenDetail is computed from.
type TokenInputs struct {
	Doc *readmodel.TokenDoc
	// Native is the token's live native order-book listing (EVM only), nil
	// when none.
	Native     *readmodel.ListingRow
	ObservedAt time.Time
	// LiveAt decides whether the overlay listing is live; zero means
	// ObservedAt (a sweep passes its clock).
	LiveAt time.Time
	USD    *float64
	// RoyaltyBps is the collection's royalty (nil: unknown): the listing's
	// fees charge it, and its buyerPrice is null without it.
	RoyaltyBps *int64
}

// TokenJSON renders TokenDetail by SPEC's rules. The listing is the native
// order-book row for an EVM token listed natively (real timestamp), else the
// live overlay row, whose timestamp is the TimedBody slot (response-build
// time); listing.tx is always null. After its SPEC fields the listing
// carries fees and buyerPrice as a row of the listings feed does (issue
// 30; in.RoyaltyBps). The owner of a listed token is the
// listing's seller; else a custody asset is kind custody with its label and
// no address; else the mirror's holder; else unknown.
func TokenJSON(in TokenInputs) TokenView {
	d := in.Doc
	c := d.Chain
	out := wire.TokenDetail{Chain: c, CollectionID: d.CollectionID, Name: StrPtr(d.Name), Image: StrPtr(d.Image)}
	if c == readmodel.Solana {
		out.Mint = StrPtr(d.TokenID)
	} else {
		out.ContractAddress = StrPtr(d.ContractAddress)
		out.TokenID = StrPtr(d.TokenID)
	}
	out.Rarity.Rank = d.RarityRank
	var listed *readmodel.ListingRow
	overlay := false
	if c.IsEVM() && in.Native != nil {
		listed = in.Native
	} else if d.Overlay != nil && d.Overlay.Live(liveAt(in)) {
		listed, overlay = d.Overlay, true
	}
	if listed != nil {
		if it, ok := ListingItem(listed, in.USD, in.ObservedAt); ok {
			it.Chain = c
			it.CollectionID = d.CollectionID
			it.Tx = nil
			if c == readmodel.Solana {
				it.Mint, it.ContractAddress, it.TokenID = StrPtr(d.TokenID), nil, nil
			} else {
				it.ContractAddress, it.TokenID, it.Mint = StrPtr(d.ContractAddress), StrPtr(d.TokenID), nil
			}
			if overlay {
				it.Timestamp = slotMark
			}
			if f, ok := FeesOf(c, listed, in.RoyaltyBps, in.USD); ok {
				list, buyer := f.wire()
				out.Listing = &wire.ListingItem{MarketItem: it, Fees: list[:], BuyerPrice: buyer}
			} else {
				listed = nil
			}
		} else {
			listed = nil
		}
	}
	switch {
	case listed != nil && listed.Seller != "":
		out.Owner = wire.Owner{Address: StrPtr(listed.Seller), Kind: wire.OwnerWallet}
	case d.InCustody:
		out.Owner = wire.Owner{Kind: wire.OwnerCustody, Label: StrPtr(d.CustodyLabel)}
		if out.Owner.Label == nil {
			l := "in custody"
			out.Owner.Label = &l
		}
	case d.OwnerAddress != "":
		out.Owner = wire.Owner{Address: StrPtr(d.OwnerAddress), Kind: wire.OwnerWallet}
	default:
		out.Owner = wire.Owner{Kind: wire.OwnerUnknown}
	}
	if p := pricePtr(c, d.LastSaleRaw, in.USD); p != nil {
		out.LastSale = &wire.LastSale{Price: *p}
	}
	b := MarshalItem(out)
	if out.Listing != nil && overlay {
		return TokenView{Body: splitSlot(b, timestampKey)}
	}
	return TokenView{Body: TimedBody{Head: b}}
}

func liveAt(in TokenInputs) time.Time {
	if in.LiveAt.IsZero() {
		return in.ObservedAt
	}
	return in.LiveAt
}

// TokenDeadline is when the listing TokenJSON would show for in expires
// (the view then changes by the clock alone); zero when it never does.
func TokenDeadline(in TokenInputs) time.Time {
	var l *readmodel.ListingRow
	if in.Doc.Chain.IsEVM() && in.Native != nil {
		l = in.Native
	} else if in.Doc.Overlay != nil && in.Doc.Overlay.Live(liveAt(in)) {
		l = in.Doc.Overlay
	}
	if l == nil || l.ExpiresAt == nil {
		return time.Time{}
	}
	return *l.ExpiresAt
}

// StrPtr returns nil for "" and &s otherwise: the null rule of every
// nullable string field.
func StrPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
