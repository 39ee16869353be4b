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
