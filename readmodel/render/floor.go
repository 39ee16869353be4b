package render

import (
	"encoding/json"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// The floor view (GET /v1/collections/{id}/floor): the ask floor with its
// fallbacks, the buyer floor and the fees of the row it comes from.

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
