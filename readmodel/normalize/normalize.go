package normalize

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/marketd/marketd/readmodel"
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

// LegacyOrderIDPrefix is the brand prefix that mirrored native Solana
// listing ids carried before August 2026 ("brand:<mint>_<millis>"). The
// mirror adapter strips it so the id equals the order-book listing id. The
// colon is outside base58, so the prefix can never be part of a mint.
const LegacyOrderIDPrefix = "brand:"

// SaleTimestampCutoff is the day from which sale rows carry the block time;
// earlier rows were dated at write time (SPEC §2 timestamp rules).
var SaleTimestampCutoff = time.Date(2026, 8, 23, 0, 0, 0, 0, time.UTC)

// Chain parses an upstream chain name, case-insensitively.
func Chain(s string) (readmodel.Chain, error) {
	if c, ok := readmodel.ParseChain(strings.ToLower(strings.TrimSpace(s))); ok {
		return c, nil
	}
	return "", normReject(RejectUnknownChain, "chain", "%q", normClip(s))
}

// EVMAddress validates a 0x-prefixed 40-hex-digit address and
// returns it lowercase.
func EVMAddress(s string) (string, error) {
	if len(s) > readmodel.MaxIDLen {
		return "", normReject(RejectOversized, "address", "%d bytes", len(s))
	}
	if !readmodel.IsEVMAddress(s) {
		return "", normReject(RejectBadAddress, "address", "%q is not 0x + 40 hex digits", normClip(s))
	}
	lower := s[1] == 'x'
	for i := 2; lower && i < len(s); i++ {
		lower = s[i] < 'A' || s[i] > 'F'
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

// SolanaAddress validates a base58 mint or wallet and returns it
// byte-for-byte (never case-folded).
func SolanaAddress(s string) (string, error) {
	if len(s) > readmodel.MaxIDLen {
		return "", normReject(RejectOversized, "address", "%d bytes", len(s))
	}
	if !readmodel.IsBase58(s) {
		return "", normReject(RejectBadAddress, "address", "%q is not base58 of 32 to 44 characters", normClip(s))
	}
	return s, nil
}

// Address validates an address (contract, mint or wallet) on chain
// c: lowercase EVM, byte-for-byte Solana.
func Address(c readmodel.Chain, s string) (string, error) {
	if c == readmodel.Solana {
		return SolanaAddress(s)
	}
	return EVMAddress(s)
}

// normalizeOptionalAddress is Address where "" means null.
func normalizeOptionalAddress(c readmodel.Chain, field, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	a, err := Address(c, s)
	if err != nil {
		return "", normWithField(err, field)
	}
	return a, nil
}

// TokenID validates an EVM token id: a decimal integer of 1 to
// MaxTokenIDLen digits, returned without leading zeros.
func TokenID(s string) (string, error) {
	if len(s) > readmodel.MaxTokenIDLen {
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

// CollectionID lowercases an upstream collection id and checks its
// size and characters (printable ASCII, no spaces).
func CollectionID(s string) (string, error) {
	if len(s) > readmodel.MaxIDLen {
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

// PriceRaw validates an integer amount of base units and returns it
// canonical (no leading zeros). Negative, fractional, exponent, hex and
// empty values are RejectBadPrice.
func PriceRaw(s string) (string, error) {
	// The rules of ParseRaw, without a big.Int: 1 to MaxRawDigits ASCII
	// digits; canonical form drops leading zeros.
	if s == "" || len(s) > readmodel.MaxRawDigits {
		return "", normReject(RejectBadPrice, "price", "%q is not an integer of 1 to %d digits", normClip(s), readmodel.MaxRawDigits)
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

// Time parses an RFC 3339 upstream time; "" is the zero time.
func Time(field, s string) (time.Time, error) {
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

// Marketplace returns MarketplaceNative for the native marker (any
// case) and otherwise the lowercase external slug, which must be 1 to 64
// characters of [a-z0-9._-].
func Marketplace(s string) (string, error) {
	if strings.EqualFold(s, readmodel.MarketplaceNative) {
		return readmodel.MarketplaceNative, nil
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

// Listing turns an upstream listing from src (SourceOrderBook or
// SourceIndexerMirror) into a ListingRow as of the poll time now. Order-book
// rows are native by definition. Rows that are not active, or whose expiry
// is not after now, are rejected with RejectInactive / RejectExpired.
func Listing(src readmodel.Source, in RawListing, now time.Time) (readmodel.ListingRow, error) {
	var r readmodel.ListingRow
	h, err := normItemHead(in.Chain, in.Contract, in.TokenID, in.Mint, in.CollectionID, in.Price)
	if err != nil {
		return r, err
	}
	c := h.chain
	r.Chain, r.ContractAddress, r.TokenID, r.Mint, r.CollectionID, r.PriceRaw = c, h.contract, h.tokenID, h.mint, h.collectionID, h.priceRaw
	if in.BuyerTotal != "" {
		if r.BuyerTotalRaw, err = PriceRaw(string(in.BuyerTotal)); err != nil {
			return r, normWithField(err, "buyerTotal")
		}
	}
	if src == readmodel.SourceOrderBook {
		r.Marketplace = readmodel.MarketplaceNative
	} else if r.Marketplace, err = Marketplace(in.Marketplace); err != nil {
		return r, err
	}
	if r.Seller, err = normSeller(c, in.Seller, in.Escrow); err != nil {
		return r, err
	}
	st := readmodel.StatusActive
	if in.Status != "" {
		s, ok := readmodel.ParseStatus(strings.ToLower(in.Status))
		if !ok {
			return r, normReject(RejectBadField, "status", "%q", normClip(in.Status))
		}
		st = s
	}
	if st != readmodel.StatusActive {
		return r, normReject(RejectInactive, "status", "%s", st)
	}
	r.Status = st
	exp, err := Time("expiresAt", in.ExpiresAt)
	if err != nil {
		return r, err
	}
	if !exp.IsZero() {
		if !exp.After(now) {
			return r, normReject(RejectExpired, "expiresAt", "%s", exp.Format(time.RFC3339))
		}
		r.ExpiresAt = &exp
	}
	created, err := Time("createdAt", in.CreatedAt)
	if err != nil {
		return r, err
	}
	updated, err := Time("updatedAt", in.UpdatedAt)
	if err != nil {
		return r, err
	}
	custody, err := Time("custodyConfirmedAt", in.CustodyAt)
	if err != nil {
		return r, err
	}
	nativeSolana := c == readmodel.Solana && r.Marketplace == readmodel.MarketplaceNative
	r.Timestamp = normFirstTime(now.UTC(), normPick(nativeSolana, custody), created, updated)
	if r.OrderID, err = normalizeOrderID(src, c, r.Marketplace, in.OrderID); err != nil {
		return r, err
	}
	if nativeSolana && in.Tx != "" {
		// tx on listings: only native Solana rows (the escrow transfer).
		if len(in.Tx) > readmodel.MaxIDLen || !normPrintable(in.Tx) {
			return r, normReject(RejectBadField, "tx", "%q", normClip(in.Tx))
		}
		r.Tx = in.Tx
	}
	return r, nil
}

// normalizeOrderID applies the per-source orderId format rules.
func normalizeOrderID(src readmodel.Source, c readmodel.Chain, marketplace, id string) (string, error) {
	if len(id) > readmodel.MaxIDLen {
		return "", normReject(RejectOversized, "orderId", "%d bytes", len(id))
	}
	if id != "" && !normPrintable(id) {
		return "", normReject(RejectBadField, "orderId", "%q has invalid characters", normClip(id))
	}
	if src == readmodel.SourceIndexerMirror && c == readmodel.Solana && marketplace == readmodel.MarketplaceNative {
		id = strings.TrimPrefix(id, LegacyOrderIDPrefix)
	}
	if c != readmodel.Solana && marketplace == readmodel.MarketplaceNative {
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

// Sale turns an upstream sale into a SaleRow. A price that cannot
// be interpreted rejects the row (RejectBadPrice). The timestamp is the
// block time; legacy rows without one keep their write time.
func Sale(in RawSale) (readmodel.SaleRow, error) {
	var r readmodel.SaleRow
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
		mp = readmodel.MarketplaceNative
	}
	if r.Marketplace, err = Marketplace(mp); err != nil {
		return r, err
	}
	r.Status = readmodel.StatusSold
	block, err := Time("blockTime", in.BlockTime)
	if err != nil {
		return r, err
	}
	recorded, err := Time("recordedAt", in.RecordedAt)
	if err != nil {
		return r, err
	}
	r.Timestamp = normFirstTime(time.Time{}, block, recorded)
	if r.Timestamp.IsZero() {
		return r, normReject(RejectBadField, "blockTime", "no block or recorded time")
	}
	if len(in.OrderID) > readmodel.MaxIDLen {
		return r, normReject(RejectOversized, "orderId", "%d bytes", len(in.OrderID))
	}
	if in.OrderID != "" && !normPrintable(in.OrderID) {
		return r, normReject(RejectBadField, "orderId", "%q", normClip(in.OrderID))
	}
	r.OrderID = strings.TrimPrefix(in.OrderID, LegacyOrderIDPrefix)
	if len(in.Tx) > readmodel.MaxIDLen || in.Tx != "" && !normPrintable(in.Tx) {
		return r, normReject(RejectBadField, "tx", "%q", normClip(in.Tx))
	}
	if c == readmodel.Solana {
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

// Collection turns a stored collection document into a
// CollectionDoc. A missing or unrecognised chain is kept as Chain "" (SPEC:
// chain null, no floor); a malformed contract rejects the document. Name
// falls back to the id; slug to the external slug, the symbol, then the
// contract. A negative or out-of-range royalty, supply or owner count
// becomes null (unknown) rather than rejecting the document.
func Collection(in RawCollection) (readmodel.CollectionDoc, error) {
	var d readmodel.CollectionDoc
	var err error
	if d.ID, err = CollectionID(in.ID); err != nil {
		return d, err
	}
	if c, cerr := Chain(in.Chain); cerr == nil {
		d.Chain = c
	}
	switch {
	case in.Contract == "":
	case d.Chain.Valid():
		if d.ContractAddress, err = Address(d.Chain, in.Contract); err != nil {
			return d, normWithField(err, "contract")
		}
	default:
		// No usable chain: keep the stored value as is, if it looks like
		// either kind of address; nothing can be computed from it anyway.
		if readmodel.IsEVMAddress(in.Contract) {
			d.ContractAddress = strings.ToLower(in.Contract)
		} else if readmodel.IsBase58(in.Contract) {
			d.ContractAddress = in.Contract
		} else {
			return d, normReject(RejectBadAddress, "contract", "%q", normClip(in.Contract))
		}
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"name", in.Name, readmodel.MaxIDLen}, {"slug", in.Slug, readmodel.MaxIDLen}, {"externalSlug", in.ExternalSlug, readmodel.MaxIDLen},
		{"symbol", in.Symbol, readmodel.MaxIDLen}, {"image", in.Image, readmodel.MaxURLLen}, {"banner", in.Banner, readmodel.MaxURLLen},
		{"description", in.Description, readmodel.MaxDescriptionLen}, {"tokenStandard", in.TokenStandard, 64},
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
		if f, ferr := PriceRaw(string(in.Floor)); ferr == nil {
			d.FloorRaw = f
		}
	}
	d.VolumeAllTime = normFiniteNonNeg(in.VolumeAllTime)
	d.Supply = normNonNeg(in.Supply)
	d.Owners = normNonNeg(in.Owners)
	d.NativeLaunched = in.NativeLaunched
	if d.CreatedAt, err = Time("createdAt", in.CreatedAt); err != nil {
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

// Token turns an indexer token into a TokenDoc as of the poll time
// now. A malformed identity or owner rejects the token; an overlay listing
// that is expired, inactive or malformed is dropped (the token stays); a
// last-sale price that cannot be interpreted becomes "" (lastSale null).
func Token(in RawToken, now time.Time) (readmodel.TokenDoc, error) {
	var d readmodel.TokenDoc
	c, err := Chain(in.Chain)
	if err != nil {
		return d, err
	}
	d.Chain = c
	if d.ContractAddress, err = Address(c, in.Contract); err != nil {
		return d, normWithField(err, "contract")
	}
	if c == readmodel.Solana {
		if d.TokenID, err = SolanaAddress(in.TokenID); err != nil {
			return d, normWithField(err, "tokenId")
		}
	} else if d.TokenID, err = TokenID(in.TokenID); err != nil {
		return d, err
	}
	if d.CollectionID, err = normCollectionID(c, in.CollectionID, d.ContractAddress); err != nil {
		return d, err
	}
	if len(in.Name) > readmodel.MaxIDLen {
		return d, normReject(RejectOversized, "name", "%d bytes", len(in.Name))
	}
	if len(in.Image) > readmodel.MaxURLLen {
		return d, normReject(RejectOversized, "image", "%d bytes", len(in.Image))
	}
	if len(in.CustodyLabel) > readmodel.MaxIDLen {
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
		if c == readmodel.Solana {
			if ov.Mint == "" {
				ov.Mint = in.TokenID
			}
		} else if ov.Contract == "" && ov.TokenID == "" {
			ov.Contract, ov.TokenID = in.Contract, in.TokenID
		}
		if ov.CollectionID == "" {
			ov.CollectionID = d.CollectionID
		}
		if row, oerr := Listing(readmodel.SourceIndexerMirror, ov, now); oerr == nil && row.AssetKey() == readmodel.AssetKey(c, d.ContractAddress, d.TokenID, d.TokenID) {
			row.Tx = ""
			d.Overlay = &row
		}
	}
	if in.LastSale != "" {
		if p, perr := PriceRaw(string(in.LastSale)); perr == nil {
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

// Stats validates a stats row; negative counts become null.
func Stats(in RawStats) (string, readmodel.CollectionStats, error) {
	id, err := CollectionID(in.CollectionID)
	if err != nil {
		return "", readmodel.CollectionStats{}, err
	}
	return id, readmodel.CollectionStats{Owners: normNonNeg(in.Owners), ListedCount: normNonNeg(in.ListedCount), IndexedCount: normNonNeg(in.IndexedCount)}, nil
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

// Analytics validates an analytics row. A floor that is not a
// canonical integer rejects the row (RejectBadPrice); negative or
// non-finite windows become null.
func Analytics(in RawAnalytics) (string, readmodel.Analytics, error) {
	var a readmodel.Analytics
	id, err := CollectionID(in.CollectionID)
	if err != nil {
		return "", a, err
	}
	if in.Floor != "" {
		if a.FloorRaw, err = PriceRaw(string(in.Floor)); err != nil {
			return "", a, normWithField(err, "floor")
		}
	}
	a.Volume24h, a.Volume7d, a.VolumeAllTime = normFiniteNonNeg(in.Volume24h), normFiniteNonNeg(in.Volume7d), normFiniteNonNeg(in.VolumeAllTime)
	a.Sales24h, a.Sales7d, a.SalesAllTime = normNonNeg(in.Sales24h), normNonNeg(in.Sales7d), normNonNeg(in.SalesAllTime)
	return id, a, nil
}

// Rates keeps the USD rates of currencies that have a feed (SOL,
// ETH): positive and finite. MATIC and APE are dropped whatever the feed
// says, so Polygon and ApeChain prices carry usd null. rejected lists the
// currencies dropped as garbage, sorted.
func Rates(in map[string]float64) (out readmodel.USDRates, rejected []string) {
	out = readmodel.USDRates{}
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
	chain                                           readmodel.Chain
	contract, tokenID, mint, collectionID, priceRaw string
}

// normItemHead normalizes a market row's identity and price; the first
// rule that fails rejects the row.
func normItemHead(chain, contract, tokenID, mint, collectionID string, price Amount) (itemHead, error) {
	var h itemHead
	c, err := Chain(chain)
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
	if h.priceRaw, err = PriceRaw(string(price)); err != nil {
		return h, err
	}
	return h, nil
}

// normSeller returns the seller to report: the beneficial owner, never the
// escrow wallet ("" when the only seller named is the escrow itself).
func normSeller(c readmodel.Chain, seller, escrow string) (string, error) {
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

func normIdentity(c readmodel.Chain, contract, tokenID, mint string, outContract, outToken, outMint *string) error {
	var err error
	if c == readmodel.Solana {
		if *outMint, err = SolanaAddress(mint); err != nil {
			return normWithField(err, "mint")
		}
		return nil
	}
	if *outContract, err = EVMAddress(contract); err != nil {
		return normWithField(err, "contract")
	}
	*outToken, err = TokenID(tokenID)
	return err
}

// collectionIDOf returns the lowercased upstream collection id, or the
// canonical one derived from the contract when the row names none.
func normCollectionID(c readmodel.Chain, id, contract string) (string, error) {
	if id != "" {
		return CollectionID(id)
	}
	if contract == "" {
		return "", normReject(RejectBadField, "collectionId", "missing")
	}
	return readmodel.CollectionIDFor(c, contract), nil
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
		if len(b) > readmodel.MaxRawDigits+8 {
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

func normClip(s string) string {
	if len(s) <= 48 {
		return s
	}
	return s[:48] + "…"
}
