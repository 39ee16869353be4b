package client

import "github.com/marketd/marketd/readmodel/wire"

// The response types are readmodel/wire's: the server renders its bodies
// from the same types, so a field it writes cannot be missing here or
// typed otherwise. The names below are aliases, for reading a call's
// signature without leaving this package; the types of one call alone
// (its query and its response, as the floor history's) sit beside it in
// api.go.
type (
	Pagination                 = wire.Pagination
	Page[T any]                = wire.Page[T]
	Meta                       = wire.Meta
	Snapshot                   = wire.Snapshot
	ListingsPage               = wire.ListingsPage
	CollectionIdentity         = wire.CollectionIdentity
	SummaryStats               = wire.SummaryStats
	CollectionSummary          = wire.CollectionSummary
	Windows[N int64 | float64] = wire.Windows[N]
	ChangeWindows              = wire.ChangeWindows
	Change                     = wire.Change
	DetailStats                = wire.DetailStats
	CollectionDetail           = wire.CollectionDetail
	Fee                        = wire.Fee
	ListingItem                = wire.ListingItem
	FloorResponse              = wire.FloorResponse
	OwnerKind                  = wire.OwnerKind
	Rarity                     = wire.Rarity
	Owner                      = wire.Owner
	LastSale                   = wire.LastSale
	TokenDetail                = wire.TokenDetail
	Event                      = wire.Event
	Endpoint                   = wire.Endpoint
	Index                      = wire.Index
	SweepFees                  = wire.SweepFees
	SweepTotals                = wire.SweepTotals
	SweepQuote                 = wire.SweepQuote
	SweepResponse              = wire.SweepResponse
	SourceStatus               = wire.SourceStatus
	NodeStatus                 = wire.NodeStatus
	Status                     = wire.Status
)
