package render

import (
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// The token view (GET /v1/tokens/...): a token's detail from its record
// and its collection's listings, rendered on read.

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
