package projector

import (
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// applySales adds a sales message's rows to its collection's history
// (store.Tx.AddSale dedupes them and stores each as a record the store
// renders on read) and puts each one added on the change feed with its
// rendered item. A row whose price cannot be interpreted is dropped here.
func (a *applier) applySales(msg *readmodel.Message) error {
	for i := range msg.Sales {
		r := msg.Sales[i]
		if r.CollectionID == "" {
			r.CollectionID = msg.CollectionID
		}
		if _, ok := render.SaleItem(&r, nil); !ok {
			continue // uninterpretable price: dropped at projection
		}
		ref, added, err := a.tx.AddSale(msg.CollectionID, &r)
		if err != nil {
			return err
		}
		if added {
			// The store renders the feed's event (usd null) and the
			// sales page's item (USD filled) from their records.
			if err := a.feedSale(msg.CollectionID, i, &r, ref); err != nil {
				return err
			}
		}
	}
	return nil
}
