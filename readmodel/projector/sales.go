package projector

import (
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// applySales adds a sales message's rows to its collection's history
// (store.Tx.AddSale dedupes them) and puts each one added on the change
// feed. A row whose price cannot be interpreted is dropped here.
func (a *applier) applySales(msg *readmodel.Message) error {
	for i := range msg.Sales {
		r := msg.Sales[i]
		if r.CollectionID == "" {
			r.CollectionID = msg.CollectionID
		}
		it, ok := render.SaleItem(&r, nil)
		if !ok {
			continue // uninterpretable price: dropped at projection
		}
		b := render.MarshalItem(it) // TemplateUSD copies what it changes: the feed's event keeps usd null
		added, err := a.tx.AddSale(msg.CollectionID, &r, tmpl(b))
		if err != nil {
			return err
		}
		if added {
			if err := a.feedSale(msg.CollectionID, i, &r, b); err != nil {
				return err
			}
		}
	}
	return nil
}
