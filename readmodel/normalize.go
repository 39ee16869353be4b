package readmodel

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// This file is the one place where upstream rows become normalized rows.
// Every rule of SPEC §2 that can be decided at ingest lives here:
//
//   - EVM addresses (contracts, wallets) are validated (0x + 40 hex) and
//     lowercased; Solana mints and wallets are validated as base58 (32 to 44
//     characters) and kept byte-for-byte.
//   - collectionId is lowercased on every chain.
//   - raw prices are canonical non-negative decimal integers of any size
//     (prices above 2^53 wei round-trip exactly); decimal, currency and usd
//     are derived from raw and the chain at projection (NewPrice).
//   - USD rates are kept only for currencies with a feed: MATIC and APE are
//     dropped, so Polygon and ApeChain prices always carry usd null.
//   - seller is the beneficial owner, never the escrow wallet.
//   - orderId per source: order-book ids as issued; mirrored Solana native
//     ids lose the legacy brand prefix (LegacyOrderIDPrefix); external ids
//     pass through; a sale's orderId is the listing it came from or null.
//   - timestamp per row kind: sale = block time, else the recorded (write)
//     time for legacy rows; native Solana listing = custody confirmation,
//     else creation, else update, else the poll time; other listings =
//     creation, else update, else the poll time.
//   - rows that are not active or have expired at the poll time are dropped
//     (reason RejectExpired / RejectInactive).
//
// Upstream garbage rejects the row with a *RejectError naming a reason.
// Nothing here panics on any input.

// RejectReason says why an upstream row was not accepted. The values are
// metric labels and appear in the ingest cycle summary.
type RejectReason string

const (
	RejectBadJSON        RejectReason = "bad_json"        // the row is not a JSON object of the contract's shape
	RejectBadAddress     RejectReason = "bad_address"     // a malformed EVM address or Solana base58 value
	RejectBadPrice       RejectReason = "bad_price"       // a negative, fractional, non-numeric or missing price
	RejectUnknownChain   RejectReason = "unknown_chain"   // a chain outside the enumeration
	RejectOversized      RejectReason = "oversized_field" // a field longer than its bound
	RejectBadField       RejectReason = "bad_field"       // any other malformed field (token id, time, status, id)
	RejectExpired        RejectReason = "expired"         // not garbage: the listing expired before the poll
	RejectInactive       RejectReason = "inactive"        // not garbage: the listing is not active
	RejectUnknownCollect RejectReason = "unknown_collection"
)

// RejectError is a row-level rejection. It is a value to count, not a
// failure of the poll.
type RejectError struct {
	Reason RejectReason
	Field  string
	Detail string
}

// Error implements error.
func (e *RejectError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("row rejected (%s): %s", e.Reason, e.Field)
	}
	return fmt.Sprintf("row rejected (%s): %s: %s", e.Reason, e.Field, e.Detail)
}

func normReject(reason RejectReason, field, format string, args ...any) *RejectError {
	return &RejectError{Reason: reason, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the reason of the first *RejectError in err's chain,
// RejectBadField for any other non-nil error and "" for nil.
func ReasonOf(err error) RejectReason {
	if err == nil {
		return ""
	}
	var r *RejectError
	if errors.As(err, &r) {
		return r.Reason
	}
	return RejectBadField
}

// Field bounds. Anything longer is upstream garbage (RejectOversized).
const (
	MaxIDLen          = 200  // ids, order ids, slugs, names, tx hashes
	MaxTokenIDLen     = 100  // EVM token id digits (SPEC §8)
	MaxURLLen         = 2048 // image and banner URLs
	MaxDescriptionLen = 8192 // free text
)

// LegacyOrderIDPrefix is the brand prefix that mirrored native Solana
// listing ids carried before August 2026 ("brand:<mint>_<millis>"). The
// mirror adapter strips it so the id equals the order-book listing id. The
// colon is outside base58, so the prefix can never be part of a mint.
const LegacyOrderIDPrefix = "brand:"

// SaleTimestampCutoff is the day from which sale rows carry the block time;
// earlier rows were dated at write time (SPEC §2 timestamp rules).
var SaleTimestampCutoff = time.Date(2026, 8, 23, 0, 0, 0, 0, time.UTC)

// NormalizeChain parses an upstream chain name, case-insensitively.
func NormalizeChain(s string) (Chain, error) {
	if c, ok := ParseChain(strings.ToLower(strings.TrimSpace(s))); ok {
		return c, nil
	}
	return "", normReject(RejectUnknownChain, "chain", "%q", normClip(s))
}

// NormalizeEVMAddress validates a 0x-prefixed 40-hex-digit address and
// returns it lowercase.
func NormalizeEVMAddress(s string) (string, error) {
	if len(s) > MaxIDLen {
		return "", normReject(RejectOversized, "address", "%d bytes", len(s))
	}
	if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") {
		return "", normReject(RejectBadAddress, "address", "%q is not 0x + 40 hex digits", normClip(s))
	}
	lower := s[1] == 'x'
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		case c >= 'A' && c <= 'F':
			lower = false
		default:
			return "", normReject(RejectBadAddress, "address", "%q is not 0x + 40 hex digits", normClip(s))
		}
	}
	if lower {
		return s, nil
	}
	// Every byte is now a digit, a hex letter or the x: setting bit 5
	// lowercases the letters and leaves the digits as they are. (Ingest
	// normalizes a few addresses per row; strings.ToLower was 3% of a
	// cycle's CPU.)
	var b [42]byte
	for i := range b {
		b[i] = s[i] | 0x20
	}
	return string(b[:]), nil
}

// IsEVMAddress reports whether s is 0x plus 40 hex digits, in any case.
func IsEVMAddress(s string) bool { _, err := NormalizeEVMAddress(s); return err == nil }

const normBase58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// IsBase58 reports whether s is a Solana base58 address: 32 to 44
// characters of the Bitcoin base58 alphabet. Case is significant.
func IsBase58(s string) bool {
	if len(s) < 32 || len(s) > 44 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(normBase58Alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

// NormalizeSolanaAddress validates a base58 mint or wallet and returns it
// byte-for-byte (never case-folded).
func NormalizeSolanaAddress(s string) (string, error) {
	if len(s) > MaxIDLen {
		return "", normReject(RejectOversized, "address", "%d bytes", len(s))
	}
	if !IsBase58(s) {
		return "", normReject(RejectBadAddress, "address", "%q is not base58 of 32 to 44 characters", normClip(s))
	}
	return s, nil
}

// NormalizeAddress validates an address (contract, mint or wallet) on chain
// c: lowercase EVM, byte-for-byte Solana.
func NormalizeAddress(c Chain, s string) (string, error) {
	if c == Solana {
		return NormalizeSolanaAddress(s)
	}
	return NormalizeEVMAddress(s)
}

// normalizeOptionalAddress is NormalizeAddress where "" means null.
func normalizeOptionalAddress(c Chain, field, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	a, err := NormalizeAddress(c, s)
	if err != nil {
		return "", normWithField(err, field)
	}
	return a, nil
}

// NormalizeTokenID validates an EVM token id: a decimal integer of 1 to
// MaxTokenIDLen digits, returned without leading zeros.
func NormalizeTokenID(s string) (string, error) {
	if len(s) > MaxTokenIDLen {
		return "", normReject(RejectOversized, "tokenId", "%d bytes", len(s))
	}
	if s == "" {
		return "", normReject(RejectBadField, "tokenId", "missing")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", normReject(RejectBadField, "tokenId", "%q is not a decimal integer", normClip(s))
		}
	}
	t := strings.TrimLeft(s, "0")
	if t == "" {
		t = "0"
	}
	return t, nil
}

// CollectionIDFor is the canonical collection document id of a contract on
// a chain: "<chain>_<contract>", lowercased on every chain.
func CollectionIDFor(c Chain, contract string) string {
	return strings.ToLower(string(c) + "_" + contract)
}

// NormalizeCollectionID lowercases an upstream collection id and checks its
// size and characters (printable ASCII, no spaces).
func NormalizeCollectionID(s string) (string, error) {
	if len(s) > MaxIDLen {
		return "", normReject(RejectOversized, "collectionId", "%d bytes", len(s))
	}
	if s == "" {
		return "", normReject(RejectBadField, "collectionId", "missing")
	}
	if !normPrintable(s) {
		return "", normReject(RejectBadField, "collectionId", "%q has invalid characters", normClip(s))
	}
	return strings.ToLower(s), nil
}

// NormalizePriceRaw validates an integer amount of base units and returns it
// canonical (no leading zeros). Negative, fractional, exponent, hex and
// empty values are RejectBadPrice.
func NormalizePriceRaw(s string) (string, error) {
	// The rules of ParseRaw, without a big.Int: 1 to MaxRawDigits ASCII
	// digits; canonical form drops leading zeros.
	if s == "" || len(s) > MaxRawDigits {
		return "", normReject(RejectBadPrice, "price", "%q is not an integer of 1 to %d digits", normClip(s), MaxRawDigits)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", normReject(RejectBadPrice, "price", "%q is not a non-negative integer", normClip(s))
		}
	}
	if s[0] != '0' {
		return s, nil
	}
	if t := strings.TrimLeft(s, "0"); t != "" {
		return t, nil
	}
	return "0", nil
}

// NormalizeTime parses an RFC 3339 upstream time; "" is the zero time.
func NormalizeTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if len(s) > 64 {
		return time.Time{}, normReject(RejectOversized, field, "%d bytes", len(s))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, normReject(RejectBadField, field, "%q is not an RFC 3339 time", normClip(s))
	}
	return t.UTC(), nil
}

// NormalizeMarketplace returns MarketplaceNative for the native marker (any
// case) and otherwise the lowercase external slug, which must be 1 to 64
// characters of [a-z0-9._-].
func NormalizeMarketplace(s string) (string, error) {
	if strings.EqualFold(s, MarketplaceNative) {
		return MarketplaceNative, nil
	}
	if len(s) > 64 {
		return "", normReject(RejectOversized, "marketplace", "%d bytes", len(s))
	}
	l := strings.ToLower(s)
	if l == "" {
		return "", normReject(RejectBadField, "marketplace", "missing")
	}
	for i := 0; i < len(l); i++ {
		b := l[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.') {
			return "", normReject(RejectBadField, "marketplace", "%q is not a slug", normClip(s))
		}
	}
	return l, nil
}

// RawListing is one listing row as an upstream (order book or indexer
// mirror) sends it: every field as text, nothing trusted.
type RawListing struct {
	Chain        string `json:"chain"`
	Contract     string `json:"contract,omitempty"` // EVM contract (any case)
	TokenID      string `json:"tokenId,omitempty"`  // EVM token id
	Mint         string `json:"mint,omitempty"`     // Solana asset mint
	CollectionID string `json:"collectionId,omitempty"`
	Price        Amount `json:"price"`
	Seller       string `json:"seller,omitempty"` // beneficial owner as the source knows it
	Escrow       string `json:"escrow,omitempty"` // escrow wallet holding the asset, if any
	Marketplace  string `json:"marketplace,omitempty"`
	Status       string `json:"status,omitempty"` // "" means active
	ExpiresAt    string `json:"expiresAt,omitempty"`
	CreatedAt    string `json:"createdAt,omitempty"`
	UpdatedAt    string `json:"updatedAt,omitempty"`
	CustodyAt    string `json:"custodyConfirmedAt,omitempty"` // native Solana: escrow custody confirmed
	OrderID      string `json:"orderId,omitempty"`
	Tx           string `json:"tx,omitempty"`
	BuyerTotal   Amount `json:"buyerTotal,omitempty"` // external: buyer all-in total
}

// NormalizeListing turns an upstream listing from src (SourceOrderBook or
// SourceIndexerMirror) into a ListingRow as of the poll time now. Order-book
// rows are native by definition. Rows that are not active, or whose expiry
// is not after now, are rejected with RejectInactive / RejectExpired.
func NormalizeListing(src Source, in RawListing, now time.Time) (ListingRow, error) {
	var r ListingRow
	h, err := normItemHead(in.Chain, in.Contract, in.TokenID, in.Mint, in.CollectionID, in.Price)
	if err != nil {
		return r, err
	}
	c := h.chain
	r.Chain, r.ContractAddress, r.TokenID, r.Mint, r.CollectionID, r.PriceRaw = c, h.contract, h.tokenID, h.mint, h.collectionID, h.priceRaw
	if in.BuyerTotal != "" {
		if r.BuyerTotalRaw, err = NormalizePriceRaw(string(in.BuyerTotal)); err != nil {
			return r, normWithField(err, "buyerTotal")
		}
	}
	if src == SourceOrderBook {
		r.Marketplace = MarketplaceNative
	} else if r.Marketplace, err = NormalizeMarketplace(in.Marketplace); err != nil {
		return r, err
	}
	if r.Seller, err = normSeller(c, in.Seller, in.Escrow); err != nil {
		return r, err
	}
	st := StatusActive
	if in.Status != "" {
		s, ok := ParseStatus(strings.ToLower(in.Status))
		if !ok {
			return r, normReject(RejectBadField, "status", "%q", normClip(in.Status))
		}
		st = s
	}
	if st != StatusActive {
		return r, normReject(RejectInactive, "status", "%s", st)
	}
	r.Status = st
	exp, err := NormalizeTime("expiresAt", in.ExpiresAt)
	if err != nil {
		return r, err
	}
	if !exp.IsZero() {
		if !exp.After(now) {
			return r, normReject(RejectExpired, "expiresAt", "%s", exp.Format(time.RFC3339))
		}
		r.ExpiresAt = &exp
	}
	created, err := NormalizeTime("createdAt", in.CreatedAt)
	if err != nil {
		return r, err
	}
	updated, err := NormalizeTime("updatedAt", in.UpdatedAt)
	if err != nil {
		return r, err
	}
	custody, err := NormalizeTime("custodyConfirmedAt", in.CustodyAt)
	if err != nil {
		return r, err
	}
	nativeSolana := c == Solana && r.Marketplace == MarketplaceNative
	r.Timestamp = normFirstTime(now.UTC(), normPick(nativeSolana, custody), created, updated)
	if r.OrderID, err = normalizeOrderID(src, c, r.Marketplace, in.OrderID); err != nil {
		return r, err
	}
	if nativeSolana && in.Tx != "" {
		// tx on listings: only native Solana rows (the escrow transfer).
		if len(in.Tx) > MaxIDLen || !normPrintable(in.Tx) {
			return r, normReject(RejectBadField, "tx", "%q", normClip(in.Tx))
		}
		r.Tx = in.Tx
	}
	return r, nil
}

// normalizeOrderID applies the per-source orderId format rules.
func normalizeOrderID(src Source, c Chain, marketplace, id string) (string, error) {
	if len(id) > MaxIDLen {
		return "", normReject(RejectOversized, "orderId", "%d bytes", len(id))
	}
	if id != "" && !normPrintable(id) {
		return "", normReject(RejectBadField, "orderId", "%q has invalid characters", normClip(id))
	}
	if src == SourceIndexerMirror && c == Solana && marketplace == MarketplaceNative {
		id = strings.TrimPrefix(id, LegacyOrderIDPrefix)
	}
	if c != Solana && marketplace == MarketplaceNative {
		// <chain>_<contract>_<tokenId>_<epochMillis>: every part is
		// lowercase by construction; fold a mixed-case contract.
		id = strings.ToLower(id)
	}
	return id, nil
}

// RawSale is one completed sale as the sales upstream sends it.
type RawSale struct {
	Chain        string `json:"chain"`
	Contract     string `json:"contract,omitempty"`
	TokenID      string `json:"tokenId,omitempty"`
	Mint         string `json:"mint,omitempty"`
	CollectionID string `json:"collectionId,omitempty"`
	Price        Amount `json:"price"`
	Seller       string `json:"seller,omitempty"`
	Buyer        string `json:"buyer,omitempty"`
	Escrow       string `json:"escrow,omitempty"`
	Marketplace  string `json:"marketplace,omitempty"`
	BlockTime    string `json:"blockTime,omitempty"`  // absent on legacy rows
	RecordedAt   string `json:"recordedAt,omitempty"` // write time
	OrderID      string `json:"orderId,omitempty"`    // listing id, "" when none recorded
	Tx           string `json:"tx,omitempty"`
}

// NormalizeSale turns an upstream sale into a SaleRow. A price that cannot
// be interpreted rejects the row (RejectBadPrice). The timestamp is the
// block time; legacy rows without one keep their write time.
func NormalizeSale(in RawSale) (SaleRow, error) {
	var r SaleRow
	h, err := normItemHead(in.Chain, in.Contract, in.TokenID, in.Mint, in.CollectionID, in.Price)
	if err != nil {
		return r, err
	}
	c := h.chain
	r.Chain, r.ContractAddress, r.TokenID, r.Mint, r.CollectionID, r.PriceRaw = c, h.contract, h.tokenID, h.mint, h.collectionID, h.priceRaw
	if r.Seller, err = normSeller(c, in.Seller, in.Escrow); err != nil {
		return r, err
	}
	if r.Buyer, err = normalizeOptionalAddress(c, "buyer", in.Buyer); err != nil {
		return r, err
	}
	mp := in.Marketplace
	if mp == "" {
		mp = MarketplaceNative
	}
	if r.Marketplace, err = NormalizeMarketplace(mp); err != nil {
		return r, err
	}
	r.Status = StatusSold
	block, err := NormalizeTime("blockTime", in.BlockTime)
	if err != nil {
		return r, err
	}
	recorded, err := NormalizeTime("recordedAt", in.RecordedAt)
	if err != nil {
		return r, err
	}
	r.Timestamp = normFirstTime(time.Time{}, block, recorded)
	if r.Timestamp.IsZero() {
		return r, normReject(RejectBadField, "blockTime", "no block or recorded time")
	}
	if len(in.OrderID) > MaxIDLen {
		return r, normReject(RejectOversized, "orderId", "%d bytes", len(in.OrderID))
	}
	if in.OrderID != "" && !normPrintable(in.OrderID) {
		return r, normReject(RejectBadField, "orderId", "%q", normClip(in.OrderID))
	}
	r.OrderID = strings.TrimPrefix(in.OrderID, LegacyOrderIDPrefix)
	if len(in.Tx) > MaxIDLen || in.Tx != "" && !normPrintable(in.Tx) {
		return r, normReject(RejectBadField, "tx", "%q", normClip(in.Tx))
	}
	if c == Solana {
		r.Tx = in.Tx
	} else {
		r.Tx = strings.ToLower(in.Tx)
	}
	return r, nil
}

// RawCollection is one stored collection document from the collection index.
type RawCollection struct {
	ID             string   `json:"id"`
	Chain          string   `json:"chain,omitempty"`
	Contract       string   `json:"contract,omitempty"` // EVM contract or Solana collection mint
	Name           string   `json:"name,omitempty"`
	Slug           string   `json:"slug,omitempty"`
	ExternalSlug   string   `json:"externalSlug,omitempty"`
	Symbol         string   `json:"symbol,omitempty"`
	Image          string   `json:"image,omitempty"`
	Banner         string   `json:"banner,omitempty"`
	Description    string   `json:"description,omitempty"`
	TokenStandard  string   `json:"tokenStandard,omitempty"`
	RoyaltyBps     *int64   `json:"royaltyBps,omitempty"`
	Floor          Amount   `json:"floor,omitempty"` // stored snapshot; garbage becomes null
	VolumeAllTime  *float64 `json:"volumeAllTime,omitempty"`
	Supply         *int64   `json:"supply,omitempty"`
	Owners         *int64   `json:"owners,omitempty"`
	NativeLaunched bool     `json:"nativeLaunched,omitempty"`
	CreatedAt      string   `json:"createdAt,omitempty"`
}

// NormalizeCollection turns a stored collection document into a
// CollectionDoc. A missing or unrecognised chain is kept as Chain "" (SPEC:
// chain null, no floor); a malformed contract rejects the document. Name
// falls back to the id; slug to the external slug, the symbol, then the
// contract. A negative or out-of-range royalty, supply or owner count
// becomes null (unknown) rather than rejecting the document.
func NormalizeCollection(in RawCollection) (CollectionDoc, error) {
	var d CollectionDoc
	var err error
	if d.ID, err = NormalizeCollectionID(in.ID); err != nil {
		return d, err
	}
	if c, cerr := NormalizeChain(in.Chain); cerr == nil {
		d.Chain = c
	}
	switch {
	case in.Contract == "":
	case d.Chain.Valid():
		if d.ContractAddress, err = NormalizeAddress(d.Chain, in.Contract); err != nil {
			return d, normWithField(err, "contract")
		}
	default:
		// No usable chain: keep the stored value as is, if it looks like
		// either kind of address; nothing can be computed from it anyway.
		if IsEVMAddress(in.Contract) {
			d.ContractAddress = strings.ToLower(in.Contract)
		} else if IsBase58(in.Contract) {
			d.ContractAddress = in.Contract
		} else {
			return d, normReject(RejectBadAddress, "contract", "%q", normClip(in.Contract))
		}
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"name", in.Name, MaxIDLen}, {"slug", in.Slug, MaxIDLen}, {"externalSlug", in.ExternalSlug, MaxIDLen},
		{"symbol", in.Symbol, MaxIDLen}, {"image", in.Image, MaxURLLen}, {"banner", in.Banner, MaxURLLen},
		{"description", in.Description, MaxDescriptionLen}, {"tokenStandard", in.TokenStandard, 64},
	} {
		if len(f.v) > f.max {
			return d, normReject(RejectOversized, f.name, "%d bytes", len(f.v))
		}
	}
	d.Name = normFirstString(in.Name, d.ID)
	d.Slug = normFirstString(in.Slug, in.ExternalSlug, in.Symbol, d.ContractAddress)
	d.Image, d.Banner, d.Description, d.TokenStandard = in.Image, in.Banner, in.Description, in.TokenStandard
	if in.RoyaltyBps != nil && *in.RoyaltyBps >= 0 && *in.RoyaltyBps <= 10000 {
		v := *in.RoyaltyBps
		d.RoyaltyBps = &v
	}
	if in.Floor != "" {
		if f, ferr := NormalizePriceRaw(string(in.Floor)); ferr == nil {
			d.FloorRaw = f
		}
	}
	d.VolumeAllTime = normFiniteNonNeg(in.VolumeAllTime)
	d.Supply = normNonNeg(in.Supply)
	d.Owners = normNonNeg(in.Owners)
	d.NativeLaunched = in.NativeLaunched
	if d.CreatedAt, err = NormalizeTime("createdAt", in.CreatedAt); err != nil {
		d.CreatedAt = time.Time{}
	}
	return d, nil
}

// RawToken is one token as the indexer mirror sends it.
type RawToken struct {
	Chain        string      `json:"chain"`
	Contract     string      `json:"contract"` // EVM contract or Solana collection mint
	TokenID      string      `json:"tokenId"`  // EVM token id or Solana asset mint
	CollectionID string      `json:"collectionId,omitempty"`
	Name         string      `json:"name,omitempty"`
	Image        string      `json:"image,omitempty"`
	RarityRank   *int64      `json:"rarityRank,omitempty"`
	Owner        string      `json:"owner,omitempty"`
	InCustody    bool        `json:"inCustody,omitempty"`
	CustodyLabel string      `json:"custodyLabel,omitempty"`
	Overlay      *RawListing `json:"overlay,omitempty"` // the indexer's active listing
	LastSale     Amount      `json:"lastSale,omitempty"`
}

// NormalizeToken turns an indexer token into a TokenDoc as of the poll time
// now. A malformed identity or owner rejects the token; an overlay listing
// that is expired, inactive or malformed is dropped (the token stays); a
// last-sale price that cannot be interpreted becomes "" (lastSale null).
func NormalizeToken(in RawToken, now time.Time) (TokenDoc, error) {
	var d TokenDoc
	c, err := NormalizeChain(in.Chain)
	if err != nil {
		return d, err
	}
	d.Chain = c
	if d.ContractAddress, err = NormalizeAddress(c, in.Contract); err != nil {
		return d, normWithField(err, "contract")
	}
	if c == Solana {
		if d.TokenID, err = NormalizeSolanaAddress(in.TokenID); err != nil {
			return d, normWithField(err, "tokenId")
		}
	} else if d.TokenID, err = NormalizeTokenID(in.TokenID); err != nil {
		return d, err
	}
	if d.CollectionID, err = normCollectionID(c, in.CollectionID, d.ContractAddress); err != nil {
		return d, err
	}
	if len(in.Name) > MaxIDLen {
		return d, normReject(RejectOversized, "name", "%d bytes", len(in.Name))
	}
	if len(in.Image) > MaxURLLen {
		return d, normReject(RejectOversized, "image", "%d bytes", len(in.Image))
	}
	if len(in.CustodyLabel) > MaxIDLen {
		return d, normReject(RejectOversized, "custodyLabel", "%d bytes", len(in.CustodyLabel))
	}
	d.Name, d.Image = in.Name, in.Image
	if in.RarityRank != nil && *in.RarityRank >= 1 {
		v := *in.RarityRank
		d.RarityRank = &v
	}
	if d.OwnerAddress, err = normalizeOptionalAddress(c, "owner", in.Owner); err != nil {
		return d, err
	}
	d.InCustody = in.InCustody
	if d.InCustody {
		d.CustodyLabel = normFirstString(in.CustodyLabel, "in escrow")
	}
	if in.Overlay != nil {
		ov := *in.Overlay
		if ov.Chain == "" {
			ov.Chain = in.Chain
		}
		if c == Solana {
			if ov.Mint == "" {
				ov.Mint = in.TokenID
			}
		} else if ov.Contract == "" && ov.TokenID == "" {
			ov.Contract, ov.TokenID = in.Contract, in.TokenID
		}
		if ov.CollectionID == "" {
			ov.CollectionID = d.CollectionID
		}
		if row, oerr := NormalizeListing(SourceIndexerMirror, ov, now); oerr == nil && row.AssetKey() == AssetKey(c, d.ContractAddress, d.TokenID, d.TokenID) {
			row.Tx = ""
			d.Overlay = &row
		}
	}
	if in.LastSale != "" {
		if p, perr := NormalizePriceRaw(string(in.LastSale)); perr == nil {
			d.LastSaleRaw = p
		}
	}
	return d, nil
}

// RawStats is the indexer-stats answer for one collection.
type RawStats struct {
	CollectionID string `json:"collectionId"`
	Owners       *int64 `json:"owners,omitempty"`
	ListedCount  *int64 `json:"listedCount,omitempty"`
	IndexedCount *int64 `json:"indexedCount,omitempty"`
}

// NormalizeStats validates a stats row; negative counts become null.
func NormalizeStats(in RawStats) (string, CollectionStats, error) {
	id, err := NormalizeCollectionID(in.CollectionID)
	if err != nil {
		return "", CollectionStats{}, err
	}
	return id, CollectionStats{Owners: normNonNeg(in.Owners), ListedCount: normNonNeg(in.ListedCount), IndexedCount: normNonNeg(in.IndexedCount)}, nil
}

// RawAnalytics is the analytics answer for one collection.
type RawAnalytics struct {
	CollectionID  string   `json:"collectionId"`
	Floor         Amount   `json:"floor,omitempty"`
	Volume24h     *float64 `json:"volume24h,omitempty"`
	Volume7d      *float64 `json:"volume7d,omitempty"`
	VolumeAllTime *float64 `json:"volumeAllTime,omitempty"`
	Sales24h      *int64   `json:"sales24h,omitempty"`
	Sales7d       *int64   `json:"sales7d,omitempty"`
	SalesAllTime  *int64   `json:"salesAllTime,omitempty"`
}

// NormalizeAnalytics validates an analytics row. A floor that is not a
// canonical integer rejects the row (RejectBadPrice); negative or
// non-finite windows become null.
func NormalizeAnalytics(in RawAnalytics) (string, Analytics, error) {
	var a Analytics
	id, err := NormalizeCollectionID(in.CollectionID)
	if err != nil {
		return "", a, err
	}
	if in.Floor != "" {
		if a.FloorRaw, err = NormalizePriceRaw(string(in.Floor)); err != nil {
			return "", a, normWithField(err, "floor")
		}
	}
	a.Volume24h, a.Volume7d, a.VolumeAllTime = normFiniteNonNeg(in.Volume24h), normFiniteNonNeg(in.Volume7d), normFiniteNonNeg(in.VolumeAllTime)
	a.Sales24h, a.Sales7d, a.SalesAllTime = normNonNeg(in.Sales24h), normNonNeg(in.Sales7d), normNonNeg(in.SalesAllTime)
	return id, a, nil
}

// NormalizeRates keeps the USD rates of currencies that have a feed (SOL,
// ETH): positive and finite. MATIC and APE are dropped whatever the feed
// says, so Polygon and ApeChain prices carry usd null. rejected lists the
// currencies dropped as garbage, sorted.
func NormalizeRates(in map[string]float64) (out USDRates, rejected []string) {
	out = USDRates{}
	for k, v := range in {
		cur := strings.ToUpper(k)
		switch cur {
		case "SOL", "ETH":
			if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
				out[cur] = v
				continue
			}
			rejected = append(rejected, cur)
		case "MATIC", "APE":
			// No feed for Polygon and ApeChain, by rule.
		default:
			if len(rejected) < 16 {
				rejected = append(rejected, normClip(cur))
			}
		}
	}
	sort.Strings(rejected)
	return out, rejected
}

// identity validates and fills the asset identity of a row on chain c:
// contract and token id on EVM, mint on Solana.
// itemHead is what listings and sales share: the chain, the asset, the
// collection and the price, normalized by the same rules.
type itemHead struct {
	chain                                           Chain
	contract, tokenID, mint, collectionID, priceRaw string
}

// normItemHead normalizes a market row's identity and price; the first
// rule that fails rejects the row.
func normItemHead(chain, contract, tokenID, mint, collectionID string, price Amount) (itemHead, error) {
	var h itemHead
	c, err := NormalizeChain(chain)
	if err != nil {
		return h, err
	}
	h.chain = c
	if err := normIdentity(c, contract, tokenID, mint, &h.contract, &h.tokenID, &h.mint); err != nil {
		return h, err
	}
	if h.collectionID, err = normCollectionID(c, collectionID, h.contract); err != nil {
		return h, err
	}
	if h.priceRaw, err = NormalizePriceRaw(string(price)); err != nil {
		return h, err
	}
	return h, nil
}

// normSeller returns the seller to report: the beneficial owner, never the
// escrow wallet ("" when the only seller named is the escrow itself).
func normSeller(c Chain, seller, escrow string) (string, error) {
	s, err := normalizeOptionalAddress(c, "seller", seller)
	if err != nil {
		return "", err
	}
	e, err := normalizeOptionalAddress(c, "escrow", escrow)
	if err != nil {
		return "", err
	}
	if s == e {
		return "", nil
	}
	return s, nil
}

func normIdentity(c Chain, contract, tokenID, mint string, outContract, outToken, outMint *string) error {
	var err error
	if c == Solana {
		if *outMint, err = NormalizeSolanaAddress(mint); err != nil {
			return normWithField(err, "mint")
		}
		return nil
	}
	if *outContract, err = NormalizeEVMAddress(contract); err != nil {
		return normWithField(err, "contract")
	}
	*outToken, err = NormalizeTokenID(tokenID)
	return err
}

// collectionIDOf returns the lowercased upstream collection id, or the
// canonical one derived from the contract when the row names none.
func normCollectionID(c Chain, id, contract string) (string, error) {
	if id != "" {
		return NormalizeCollectionID(id)
	}
	if contract == "" {
		return "", normReject(RejectBadField, "collectionId", "missing")
	}
	return CollectionIDFor(c, contract), nil
}

// Amount is an upstream amount of base units as text. It decodes from a
// JSON string or a JSON number (kept as its literal text, so "1.5" or
// "1e18" arrive verbatim and are then rejected as bad prices); null is "".
type Amount string

// UnmarshalJSON implements json.Unmarshaler.
func (a *Amount) UnmarshalJSON(b []byte) error {
	if len(b) == 0 {
		*a = ""
		return nil
	}
	switch b[0] {
	case '"':
		s, ok := normUnquote(b)
		if !ok {
			return fmt.Errorf("amount: invalid string")
		}
		*a = Amount(s)
	case 'n':
		*a = ""
	default:
		if len(b) > MaxRawDigits+8 {
			return fmt.Errorf("amount: number too long")
		}
		*a = Amount(b)
	}
	return nil
}

// unquoteSimple unquotes a JSON string without escapes (amounts never need
// them); a string with escapes is not an amount.
func normUnquote(b []byte) (string, bool) {
	if len(b) < 2 || b[len(b)-1] != '"' {
		return "", false
	}
	s := b[1 : len(b)-1]
	for _, c := range s {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	return string(s), true
}

func normWithField(err error, field string) error {
	var r *RejectError
	if errors.As(err, &r) {
		c := *r
		c.Field = field
		return &c
	}
	return err
}

func normFirstTime(fallback time.Time, ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return fallback
}

func normPick(ok bool, t time.Time) time.Time {
	if ok {
		return t
	}
	return time.Time{}
}

func normFirstString(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func normNonNeg(p *int64) *int64 {
	if p == nil || *p < 0 {
		return nil
	}
	v := *p
	return &v
}

func normFiniteNonNeg(p *float64) *float64 {
	if p == nil || *p < 0 || math.IsInf(*p, 0) || math.IsNaN(*p) {
		return nil
	}
	v := *p
	return &v
}

// printableID reports whether s is printable ASCII without spaces, quotes
// or backslashes: safe as an id, a subject token or a log field.
func normPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b <= ' ' || b >= 0x7f || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}

func normClip(s string) string { return truncate(s, 48) }
