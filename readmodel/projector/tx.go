package projector

import (
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

// inputTx is what applying a message reads and writes in a transaction
// besides its collection's state: the state's records themselves, and
// the indexes that span collections (the registry, poll statuses and
// times, rates, token blocks, the sales' history). Errors are the
// transaction's: a failed read fails its commit too.
type inputTx interface {
	CollectionState(cid string, listings bool) (store.CollectionState, error)
	Register(cid string)
	Input(kind store.InputKind, parts ...string) ([]byte, error)
	Put(kind store.InputKind, v any, parts ...string)
	GetRaw(kind store.InputKind, parts ...string) ([]byte, error)
	PutRaw(kind store.InputKind, b []byte, parts ...string)
	TokenRecord(k string) (*store.TokenRecord, error)
	TokenRecordHead(k string) (hash uint64, bucket uint32, ok bool, err error)
	TokenBlockKeys(addr string, bucket uint32) ([]string, error)
	SaleStored(cid string, ref store.SaleRef) (bool, error)
	ViewRecord(m render.ViewModule, cid string) (any, error)
}

// viewTx is what saving a transaction's collection states and the views
// rendered from them writes.
type viewTx interface {
	NextVersion() uint64
	PutCollectionState(cid string, st *store.CollectionState, changed *[store.NumStateSections]bool)
	AppendEvents(cid string, h store.FeedHead, events []store.NewEvent) store.FeedHead
	AppendMarket(events []store.MarketEvent)
	SetAliases(cid string, old, new []store.Alias)
	RoyaltyChanged(cid string)
	PutCollection(v render.CollectionView)
	SetBrowse(cid string, entries []store.BrowseEntry, item []byte)
	PutListings(cid string, v render.ListingsRecord)
	SetDeadline(cid string, at time.Time)
	PutFloor(cid string, v render.FloorView)
	PutViewRecord(m render.ViewModule, cid string, version uint64, rec any)
	DeleteFloor(cid string)
	PutQuote(rates readmodel.USDRates, feedOK bool)
	PutTokenRecord(k string, r *store.TokenRecord)
	DeleteTokenRecord(k string)
	PutSale(cid string, ref store.SaleRef, row *readmodel.SaleRow)
}

// stateTx is one transaction of the projector: Badger's (store.Tx) live
// and in a replay.
type stateTx interface {
	inputTx
	viewTx
}

var _ stateTx = (*store.Tx)(nil)

// input decodes the JSON input stored under (kind, parts) into a new T
// (nil: none).
func input[T any](tx inputTx, kind store.InputKind, parts ...string) (*T, error) {
	raw, err := tx.Input(kind, parts...)
	if err != nil {
		return nil, err
	}
	return store.DecodeJSON[T](raw)
}
