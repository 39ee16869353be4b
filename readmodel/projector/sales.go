package projector

import (
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

// A sales message adds its rows to its collection's history, each sale
// once (its SaleKey), and puts each one added on the change feed. The
// history is an index as large as the market, so load reads what applying
// needs of it (loadSales: whether each row's sale is stored), apply
// decides which rows are added (applySales), and save stores them
// (saveSales). A row whose price cannot be interpreted is dropped at load.

// saleIn is a row of a sales message as load read it.
type saleIn struct {
	row  readmodel.SaleRow
	ref  store.SaleRef
	drop bool // its price cannot be interpreted
}

// saleKey names a sale in a collection's history.
type saleKey struct {
	cid  string
	sale [8]byte
}

// salePut is a sale applying added, for save to store.
type salePut struct {
	cid string
	in  *saleIn
}

// loadSales reads whether each row of sales message msg is in its
// collection's history.
func (a *applier) loadSales(msg *readmodel.Message) error {
	cid := msg.CollectionID
	ins := make([]saleIn, len(msg.Sales))
	for i := range msg.Sales {
		in := &ins[i]
		in.row = msg.Sales[i]
		if in.row.CollectionID == "" {
			in.row.CollectionID = cid
		}
		if _, ok := render.SaleItem(&in.row, nil); !ok {
			in.drop = true // uninterpretable price: dropped at projection
			continue
		}
		in.ref = store.SaleRefOf(&in.row)
		k := saleKey{cid, in.ref.Dedupe()}
		if _, known := a.sales[k]; known {
			continue
		}
		stored, err := a.tx.SaleStored(cid, in.ref)
		if err != nil {
			return err
		}
		if a.sales == nil {
			a.sales = map[saleKey]bool{}
		}
		a.sales[k] = stored
	}
	if a.loadedSales == nil {
		a.loadedSales = map[*readmodel.Message][]saleIn{}
	}
	a.loadedSales[msg] = ins
	return nil
}

// applySales adds the rows of sales message msg that its collection's
// history lacks (stored before this batch, or added earlier in it) and
// puts each one added on the change feed.
func (a *applier) applySales(msg *readmodel.Message) error {
	ins, ok := a.loadedSales[msg]
	if !ok {
		return errNotLoaded
	}
	delete(a.loadedSales, msg)
	for i := range ins {
		in := &ins[i]
		if in.drop {
			continue
		}
		k := saleKey{msg.CollectionID, in.ref.Dedupe()}
		if a.sales[k] {
			continue
		}
		a.sales[k] = true
		a.salePuts = append(a.salePuts, salePut{cid: msg.CollectionID, in: in})
		// The store renders the feed's event (usd null) and the sales
		// page's item (USD filled) from their records.
		if err := a.feedSale(msg.CollectionID, i, &in.row, in.ref); err != nil {
			return err
		}
	}
	return nil
}

// saveSales stores the sales applying added, in the order it added them.
func (a *applier) saveSales() {
	for _, p := range a.salePuts {
		a.tx.PutSale(p.cid, p.in.ref, &p.in.row)
	}
	a.salePuts = nil
}
