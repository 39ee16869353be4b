package client

import (
	"encoding/json"

	"github.com/marketd/marketd/readmodel"
)

// Pagination is SPEC's pagination object. HasMore is the only termination
// signal.
type Pagination struct {
	NextCursor *string `json:"nextCursor"`
	HasMore    bool    `json:"hasMore"`
}

// Meta is the listings endpoint's degradation flag; nil on a healthy page.
type Meta struct {
	Stale        bool     `json:"stale"`
	StaleSources []string `json:"staleSources"`
}

// Page is one page of a list endpoint.
type Page[T any] struct {
	Data       []T        `json:"data"`
	Pagination Pagination `json:"pagination"`
	Meta       *Meta      `json:"meta,omitempty"` // listings only
}

// CollectionStats are a CollectionSummary's stats.
type CollectionStats struct {
	Floor         *readmodel.Price `json:"floor"`
	VolumeAllTime *float64         `json:"volumeAllTime"`
	Supply        *float64         `json:"supply"`
	Owners        *float64         `json:"owners"`
}

// CollectionIdentity is what a collection's summary and detail share: its
// identity and presentation fields (SPEC §2).
type CollectionIdentity struct {
	ID              string           `json:"id"`
	Chain           *readmodel.Chain `json:"chain"`
	ContractAddress *string          `json:"contractAddress"`
	Name            string           `json:"name"`
	Slug            *string          `json:"slug"`
	Image           *string          `json:"image"`
	Banner          *string          `json:"banner"`
	Description     *string          `json:"description"`
	TokenStandard   *string          `json:"tokenStandard"`
	RoyaltyBps      *float64         `json:"royaltyBps"`
}

// CollectionSummary is an item of GET /v1/collections.
type CollectionSummary struct {
	CollectionIdentity
	Stats CollectionStats `json:"stats"`
}

// Windows are all-time, seven-day and 24-hour figures; nil is unknown.
type Windows struct {
	AllTime        *float64 `json:"allTime"`
	SevenDay       *float64 `json:"sevenDay"`
	TwentyFourHour *float64 `json:"twentyFourHour"`
}

// DetailStats are a CollectionDetail's stats.
type DetailStats struct {
	Floor       *readmodel.Price `json:"floor"`
	Volume      Windows          `json:"volume"`
	Sales       Windows          `json:"sales"`
	Supply      *float64         `json:"supply"`
	Owners      *float64         `json:"owners"`
	ListedCount *float64         `json:"listedCount"`
}

// CollectionDetail is GET /v1/collections/{id}.
type CollectionDetail struct {
	CollectionIdentity
	Stats DetailStats `json:"stats"`
	Stale bool        `json:"stale"`
}

// FloorResponse is GET /v1/collections/{id}/floor.
type FloorResponse struct {
	CollectionID string           `json:"collectionId"`
	AskFloor     *readmodel.Price `json:"askFloor"`
	BuyerFloor   *readmodel.Price `json:"buyerFloor"`
	Aggregated   bool             `json:"aggregated"`
	UpdatedAt    string           `json:"updatedAt"`
	Stale        bool             `json:"stale"`
}

// Owner is a token's owner classification.
type Owner struct {
	Address *string `json:"address"`
	Kind    string  `json:"kind"` // wallet, custody, unknown
	Label   *string `json:"label"`
}

// LastSale is a token's last recorded sale: its price only.
type LastSale struct {
	Price readmodel.Price `json:"price"`
}

// TokenDetail is GET /v1/tokens/{chain}/{address}/{tokenId}.
type TokenDetail struct {
	Chain           readmodel.Chain `json:"chain"`
	ContractAddress *string         `json:"contractAddress"`
	TokenID         *string         `json:"tokenId"`
	Mint            *string         `json:"mint"`
	CollectionID    string          `json:"collectionId"`
	Name            *string         `json:"name"`
	Image           *string         `json:"image"`
	Rarity          struct {
		Rank *float64 `json:"rank"`
	} `json:"rarity"`
	Owner    Owner                 `json:"owner"`
	Listing  *readmodel.MarketItem `json:"listing"`
	LastSale *LastSale             `json:"lastSale"`
}

// Index is GET /v1. Unknown fields are kept in Raw.
type Index struct {
	Name          string          `json:"name"`
	Version       string          `json:"version"`
	Documentation string          `json:"documentation"`
	Endpoints     json.RawMessage `json:"endpoints"`
}

type envelope[T any] struct {
	Data T `json:"data"`
}
