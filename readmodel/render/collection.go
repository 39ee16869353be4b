package render

import (
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// The collection views: a summary (a browse item) and the detail
// (GET /v1/collections/{id}), with the samples its change ratios read.

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
