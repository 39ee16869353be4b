package readmodel

import "time"

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
