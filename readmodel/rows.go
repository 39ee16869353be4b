package readmodel

import (
	"hash/fnv"
	"time"
)

// The types in this file are normalized rows: what ingest publishes and the
// projector applies. Every rule of SPEC §2 that can be decided upstream of a
// read has already been applied to them (see normalize.go): EVM addresses
// are lowercase, Solana mints are byte-for-byte, collection ids are
// lowercase, raw prices are canonical non-negative integers, orderIds are in
// their per-source format, timestamps follow the per-kind rules. Empty
// strings stand for null.

// A row's fields are listed once, by its Fields method, in the row's fixed
// order (the order of its struct and of its JSON). The byte encodings of
// rows walk them: ingest's change hash, and the projector's token record
// (the store's schema). Adding a field to a row is adding it to the struct
// and to its Fields method; the encodings follow. Rendering (render) and
// the OpenAPI schema name the fields they serve explicitly.

// FieldVisitor is handed each field of a row, by its JSON name, with a
// pointer to it: an encoder reads through the pointer, a decoder writes.
// Typed strings (Chain, Status) are handed as strings.
type FieldVisitor interface {
	Str(name string, p *string)
	Bool(name string, p *bool)
	Int64Ptr(name string, p **int64)
	Time(name string, p *time.Time)
	TimePtr(name string, p **time.Time)
	// Listing is a nested listing (a token's overlay); nil when absent. A
	// visitor that walks it calls the listing's Fields.
	Listing(name string, p **ListingRow)
}

// ListingRow is one listing from the order book or the indexer mirror.
type ListingRow struct {
	Chain           Chain      `json:"chain"`
	ContractAddress string     `json:"contractAddress,omitempty"` // EVM only
	TokenID         string     `json:"tokenId,omitempty"`         // EVM only
	Mint            string     `json:"mint,omitempty"`            // Solana only
	CollectionID    string     `json:"collectionId"`
	PriceRaw        string     `json:"priceRaw"`
	Seller          string     `json:"seller,omitempty"`
	Marketplace     string     `json:"marketplace"` // NATIVE or an external slug
	Status          Status     `json:"status"`
	ExpiresAt       *time.Time `json:"expiresAt,omitempty"`
	Timestamp       time.Time  `json:"timestamp"`
	OrderID         string     `json:"orderId,omitempty"`
	Tx              string     `json:"tx,omitempty"`
	// BuyerTotalRaw is an external marketplace's buyer all-in total, when it
	// reports one; it feeds buyerFloor for external rows.
	BuyerTotalRaw string `json:"buyerTotalRaw,omitempty"`
}

// Fields walks every field of r in order.
func (r *ListingRow) Fields(v FieldVisitor) {
	v.Str("chain", (*string)(&r.Chain))
	v.Str("contractAddress", &r.ContractAddress)
	v.Str("tokenId", &r.TokenID)
	v.Str("mint", &r.Mint)
	v.Str("collectionId", &r.CollectionID)
	v.Str("priceRaw", &r.PriceRaw)
	v.Str("seller", &r.Seller)
	v.Str("marketplace", &r.Marketplace)
	v.Str("status", (*string)(&r.Status))
	v.TimePtr("expiresAt", &r.ExpiresAt)
	v.Time("timestamp", &r.Timestamp)
	v.Str("orderId", &r.OrderID)
	v.Str("tx", &r.Tx)
	v.Str("buyerTotalRaw", &r.BuyerTotalRaw)
}

// AssetKey is the row's deduplication key.
func (r *ListingRow) AssetKey() string {
	return AssetKey(r.Chain, r.ContractAddress, r.TokenID, r.Mint)
}

// Native reports whether the row is native to the service.
func (r *ListingRow) Native() bool { return r.Marketplace == MarketplaceNative }

// Live reports whether the row belongs in a listings feed at time now:
// status active and not expired.
func (r *ListingRow) Live(now time.Time) bool {
	return r.Status == StatusActive && (r.ExpiresAt == nil || r.ExpiresAt.After(now))
}

// SaleRow is one completed sale.
type SaleRow struct {
	Chain           Chain     `json:"chain"`
	ContractAddress string    `json:"contractAddress,omitempty"`
	TokenID         string    `json:"tokenId,omitempty"`
	Mint            string    `json:"mint,omitempty"`
	CollectionID    string    `json:"collectionId"`
	PriceRaw        string    `json:"priceRaw"` // canonical; uninterpretable prices never get here
	Seller          string    `json:"seller,omitempty"`
	Buyer           string    `json:"buyer,omitempty"`
	Marketplace     string    `json:"marketplace"`
	Status          Status    `json:"status"`
	Timestamp       time.Time `json:"timestamp"` // block time (write time before 2026-08-23)
	OrderID         string    `json:"orderId,omitempty"`
	Tx              string    `json:"tx,omitempty"`
}

// Fields walks every field of s in order.
func (s *SaleRow) Fields(v FieldVisitor) {
	v.Str("chain", (*string)(&s.Chain))
	v.Str("contractAddress", &s.ContractAddress)
	v.Str("tokenId", &s.TokenID)
	v.Str("mint", &s.Mint)
	v.Str("collectionId", &s.CollectionID)
	v.Str("priceRaw", &s.PriceRaw)
	v.Str("seller", &s.Seller)
	v.Str("buyer", &s.Buyer)
	v.Str("marketplace", &s.Marketplace)
	v.Str("status", (*string)(&s.Status))
	v.Time("timestamp", &s.Timestamp)
	v.Str("orderId", &s.OrderID)
	v.Str("tx", &s.Tx)
}

// SaleKey identifies a sale for idempotent projection: the same sale applied
// twice is one sale.
func (s *SaleRow) SaleKey() string {
	return s.Tx + "|" + s.OrderID + "|" + s.Mint + "|" + s.ContractAddress + "|" + s.TokenID
}

// CollectionDoc is a stored collection document from the collection index.
type CollectionDoc struct {
	ID              string    `json:"id"`              // lowercase document id
	Chain           Chain     `json:"chain,omitempty"` // "" when missing or unrecognised
	ContractAddress string    `json:"contractAddress,omitempty"`
	Name            string    `json:"name"` // already falls back to ID
	Slug            string    `json:"slug,omitempty"`
	Image           string    `json:"image,omitempty"`
	Banner          string    `json:"banner,omitempty"`
	Description     string    `json:"description,omitempty"`
	TokenStandard   string    `json:"tokenStandard,omitempty"`
	RoyaltyBps      *int64    `json:"royaltyBps,omitempty"`
	FloorRaw        string    `json:"floorRaw,omitempty"` // stored floor snapshot
	VolumeAllTime   *float64  `json:"volumeAllTime,omitempty"`
	Supply          *int64    `json:"supply,omitempty"`
	Owners          *int64    `json:"owners,omitempty"`
	NativeLaunched  bool      `json:"nativeLaunched"`
	CreatedAt       time.Time `json:"createdAt"` // drives sort=recent
}

// CollectionStats is the indexer-stats answer for one collection.
type CollectionStats struct {
	Owners       *int64 `json:"owners,omitempty"`
	ListedCount  *int64 `json:"listedCount,omitempty"`
	IndexedCount *int64 `json:"indexedCount,omitempty"` // supply fallback
}

// Analytics is the live analytics answer for one collection.
type Analytics struct {
	FloorRaw      string   `json:"floorRaw,omitempty"`
	Volume24h     *float64 `json:"volume24h,omitempty"`
	Volume7d      *float64 `json:"volume7d,omitempty"`
	VolumeAllTime *float64 `json:"volumeAllTime,omitempty"`
	Sales24h      *int64   `json:"sales24h,omitempty"`
	Sales7d       *int64   `json:"sales7d,omitempty"`
	SalesAllTime  *int64   `json:"salesAllTime,omitempty"`
}

// TokenDoc is the indexer mirror's view of one token. Owner rules are applied
// at projection, where the native order book is known.
type TokenDoc struct {
	Chain           Chain  `json:"chain"`
	ContractAddress string `json:"contractAddress"` // EVM contract, or the Solana COLLECTION mint
	TokenID         string `json:"tokenId"`         // EVM token id, or the Solana ASSET mint
	CollectionID    string `json:"collectionId"`
	Name            string `json:"name,omitempty"`
	Image           string `json:"image,omitempty"`
	RarityRank      *int64 `json:"rarityRank,omitempty"`
	// OwnerAddress is the on-chain holder as the mirror sees it; when
	// InCustody is set it is the escrow wallet and must never be shown.
	OwnerAddress string `json:"ownerAddress,omitempty"`
	InCustody    bool   `json:"inCustody,omitempty"`
	CustodyLabel string `json:"custodyLabel,omitempty"`
	// Overlay is the mirror's active listing for the token, if any; its
	// OrderID is the on-chain order hash where the source has one.
	Overlay *ListingRow `json:"overlay,omitempty"`
	// LastSaleRaw is the last recorded sale price; "" when none was recorded
	// or it could not be interpreted (then lastSale is null).
	LastSaleRaw string `json:"lastSaleRaw,omitempty"`
}

// Fields walks every field of d in order.
func (d *TokenDoc) Fields(v FieldVisitor) {
	v.Str("chain", (*string)(&d.Chain))
	v.Str("contractAddress", &d.ContractAddress)
	v.Str("tokenId", &d.TokenID)
	v.Str("collectionId", &d.CollectionID)
	v.Str("name", &d.Name)
	v.Str("image", &d.Image)
	v.Int64Ptr("rarityRank", &d.RarityRank)
	v.Str("ownerAddress", &d.OwnerAddress)
	v.Bool("inCustody", &d.InCustody)
	v.Str("custodyLabel", &d.CustodyLabel)
	v.Listing("overlay", &d.Overlay)
	v.Str("lastSaleRaw", &d.LastSaleRaw)
}

// TokenKey identifies a token view: chain, address as in the token path
// (EVM contract lowercase or Solana collection mint) and token id or asset
// mint.
func TokenKey(c Chain, address, tokenID string) string {
	return string(c) + "|" + address + "|" + tokenID
}

// TokenBucket is the stable bucket of a token key (TokenKey) among n
// buckets: ingest splits a collection's tokens by it, and the store finds
// a token's block by it.
func TokenBucket(tokenKey string, n int) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tokenKey))
	return h.Sum32() % uint32(max(n, 1))
}

// USDRates maps a currency symbol (SOL, ETH, APE, MATIC) to the USD price of
// one whole unit. A currency absent from the map has no rate.
type USDRates map[string]float64

// SameBps reports whether two basis-point values (a collection's
// royaltyBps; nil: unknown) are both unknown or equal.
func SameBps(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
