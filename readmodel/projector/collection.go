package projector

import (
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

// aliases lists a document's {id} forms: the document id, its address
// (EVM lowercase; a Solana mint as stored) and its slug.
func aliases(d *readmodel.CollectionDoc) []store.Alias {
	out := []store.Alias{{Key: d.ID, Kind: store.AliasDocumentID, Chain: d.Chain}}
	if d.ContractAddress != "" {
		addr := d.ContractAddress
		if d.Chain.IsEVM() {
			addr = lowerASCII(addr)
		}
		out = append(out, store.Alias{Key: addr, Kind: store.AliasAddress, Chain: d.Chain})
	}
	if d.Slug != "" {
		out = append(out, store.Alias{Key: d.Slug, Kind: store.AliasSlug, Chain: d.Chain})
	}
	return out
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// doc returns collection cid's document, nil when none. Callers must not
// modify it.
func (a *applier) doc(cid string) (*readmodel.CollectionDoc, error) {
	st, err := a.state(cid)
	if err != nil {
		return nil, err
	}
	return st.Doc()
}

func (a *applier) renderCollection(cid string, doc *readmodel.CollectionDoc, parts int) error {
	if parts&partDetail != 0 {
		in := render.DetailInputs{Doc: doc}
		st, err := a.state(cid)
		if err != nil {
			return err
		}
		if in.Stats, err = st.Stats(); err != nil {
			return err
		}
		if in.Analytics, err = st.Analytics(); err != nil {
			return err
		}
		ss, err := a.status(readmodel.SourceIndexerStats, cid)
		if err != nil {
			return err
		}
		as, err := a.status(readmodel.SourceAnalytics, cid)
		if err != nil {
			return err
		}
		in.StatsFailed, in.AnalyticsFailed = failed(ss), failed(as)
		if in.Changes, err = a.history(cid, in); err != nil {
			return err
		}
		asOf, err := a.freshness(cid, readmodel.SourceCollectionIndex, readmodel.SourceIndexerStats, readmodel.SourceAnalytics)
		if err != nil {
			return err
		}
		a.tx.PutCollection(render.CollectionView{
			ID:          cid,
			Chain:       validChain(doc.Chain),
			HasContract: doc.ContractAddress != "",
			Version:     a.ver(),
			Detail:      tmpl(render.CollectionDetailJSON(in)),
			AsOf:        asOf,
		})
	}
	if parts&partBrowse != 0 {
		item := tmpl(render.CollectionSummaryJSON(doc, nil))
		var entries []store.BrowseEntry
		chains := []readmodel.Chain{""}
		if c := validChain(doc.Chain); c != "" {
			chains = append(chains, c)
		}
		var floor float64
		var hasFloor bool
		if c := validChain(doc.Chain); c != "" {
			if p, ok := render.PriceOf(c, doc.FloorRaw, nil); ok && doc.FloorRaw != "" {
				floor, hasFloor = p.Decimal, true
			}
		}
		for _, c := range chains {
			for _, s := range readmodel.Sorts {
				e := store.BrowseEntry{Sort: s, Chain: c, Native: doc.NativeLaunched}
				switch s {
				case readmodel.SortVolume:
					if doc.VolumeAllTime != nil {
						e.Present, e.Value = true, *doc.VolumeAllTime
					}
				case readmodel.SortFloor:
					e.Present, e.Value = hasFloor, floor
				case readmodel.SortRecent:
					if !doc.CreatedAt.IsZero() {
						e.Present, e.Value = true, float64(doc.CreatedAt.UnixMilli())
					}
				}
				entries = append(entries, e)
			}
		}
		a.tx.SetBrowse(cid, entries, item)
	}
	return nil
}

func validChain(c readmodel.Chain) readmodel.Chain {
	if c.Valid() {
		return c
	}
	return ""
}
