package store

import "github.com/marketd/marketd/readmodel"

// benchAddSale adds sale r of cid as the projector does.
func benchAddSale(tx *Tx, cid string, r *readmodel.SaleRow) error {
	_, err := tx.AddSale(cid, r)
	return err
}
