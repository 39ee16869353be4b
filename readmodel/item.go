package readmodel

import "time"

// Status is MarketItem.status.
type Status string

const (
	StatusActive    Status = "active"
	StatusFilled    Status = "filled"
	StatusCancelled Status = "cancelled"
	StatusExpired   Status = "expired"
	StatusSold      Status = "sold"
)

// ParseStatus returns the status named s; ok is false for anything else.
func ParseStatus(s string) (Status, bool) {
	switch Status(s) {
	case StatusActive, StatusFilled, StatusCancelled, StatusExpired, StatusSold:
		return Status(s), true
	}
	return "", false
}

// MarketplaceNative is the marketplace value of rows native to the service.
const MarketplaceNative = "NATIVE"

// MarketItem is SPEC's MarketItem as served: listings, sales and a token's
// listing. Field order is the wire order. Nullable fields are pointers and are
// always present (null when nil).
type MarketItem struct {
	Chain           Chain   `json:"chain"`
	ContractAddress *string `json:"contractAddress"`
	TokenID         *string `json:"tokenId"`
	Mint            *string `json:"mint"`
	CollectionID    string  `json:"collectionId"`
	Price           Price   `json:"price"`
	Seller          *string `json:"seller"`
	Buyer           *string `json:"buyer"`
	Marketplace     string  `json:"marketplace"`
	Status          Status  `json:"status"`
	ExpiresAt       *string `json:"expiresAt"`
	Timestamp       string  `json:"timestamp"`
	OrderID         *string `json:"orderId"`
	Tx              *string `json:"tx"`
}

// ItemVisitor is handed each field of a MarketItem, in wire order, by its
// JSON name: MarketItem.Fields is the one list of an item's fields, and
// the item's JSON encoder (readmodel/render) walks it.
type ItemVisitor interface {
	Str(name, v string)
	StrPtr(name string, v *string) // null when nil
	Price(name string, p Price)
}

// Fields hands v each field of it, in wire order.
func (it *MarketItem) Fields(v ItemVisitor) {
	v.Str("chain", string(it.Chain))
	v.StrPtr("contractAddress", it.ContractAddress)
	v.StrPtr("tokenId", it.TokenID)
	v.StrPtr("mint", it.Mint)
	v.Str("collectionId", it.CollectionID)
	v.Price("price", it.Price)
	v.StrPtr("seller", it.Seller)
	v.StrPtr("buyer", it.Buyer)
	v.Str("marketplace", it.Marketplace)
	v.Str("status", string(it.Status))
	v.StrPtr("expiresAt", it.ExpiresAt)
	v.Str("timestamp", it.Timestamp)
	v.StrPtr("orderId", it.OrderID)
	v.StrPtr("tx", it.Tx)
}

// Item is listing row r as served, at price p (the caller builds it: its
// usd depends on the price feed). A row with no timestamp of its own is
// dated observedAt, when its source was read (SPEC §2's timestamp rules);
// tx is set only on native Solana rows (the escrow transfer signature).
func (r *ListingRow) Item(p Price, observedAt time.Time) MarketItem {
	it := MarketItem{
		Chain:        r.Chain,
		CollectionID: r.CollectionID,
		Price:        p,
		Seller:       strPtr(r.Seller),
		Marketplace:  r.Marketplace,
		Status:       r.Status,
		OrderID:      strPtr(r.OrderID),
	}
	if r.Chain == Solana {
		it.Mint = strPtr(r.Mint)
		if r.Native() {
			it.Tx = strPtr(r.Tx)
		}
	} else {
		it.ContractAddress = strPtr(r.ContractAddress)
		it.TokenID = strPtr(r.TokenID)
	}
	if r.ExpiresAt != nil {
		s := FormatTime(*r.ExpiresAt)
		it.ExpiresAt = &s
	}
	ts := r.Timestamp
	if ts.IsZero() {
		ts = observedAt
	}
	it.Timestamp = FormatTime(ts)
	return it
}

// Item is sale row s as served, at price p. A sale with no stored status
// is sold.
func (s *SaleRow) Item(p Price) MarketItem {
	st := s.Status
	if st == "" {
		st = StatusSold
	}
	it := MarketItem{
		Chain:        s.Chain,
		CollectionID: s.CollectionID,
		Price:        p,
		Seller:       strPtr(s.Seller),
		Buyer:        strPtr(s.Buyer),
		Marketplace:  s.Marketplace,
		Status:       st,
		Timestamp:    FormatTime(s.Timestamp),
		OrderID:      strPtr(s.OrderID),
		Tx:           strPtr(s.Tx),
	}
	if s.Chain == Solana {
		it.Mint = strPtr(s.Mint)
	} else {
		it.ContractAddress = strPtr(s.ContractAddress)
		it.TokenID = strPtr(s.TokenID)
	}
	return it
}

// strPtr is s, or nil (JSON null) when s is empty.
func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// TimeFormat is how every date-time is written: RFC 3339 in UTC with
// millisecond precision.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t in TimeFormat, in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// AssetKey identifies one asset for listing deduplication (SPEC listings
// rule 2): (chain, contractAddress, tokenId) on EVM, the mint on Solana.
func AssetKey(c Chain, contract, tokenID, mint string) string {
	if c == Solana {
		return "solana|" + mint
	}
	return string(c) + "|" + contract + "|" + tokenID
}
