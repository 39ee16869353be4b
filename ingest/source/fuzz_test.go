package source_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// FuzzDecodePage feeds arbitrary bodies to the page and row decoders and
// the normalizers behind them, as the ingest cycle does: nothing may panic
// and a decoded page never yields an accepted row that breaks SPEC §2.
func FuzzDecodePage(f *testing.F) {
	f.Add([]byte(`{"items":[{"collectionId":"c","rows":[{"chain":"ethereum","contract":"0x00000000000000000000000000000000000000AA","tokenId":"1","price":"1"}]}],"nextCursor":"1.2"}`))
	f.Add([]byte(`{"items":[{"collectionId":"c","rows":["x",1,null,{"chain":"solana","mint":"7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU","price":1.5}]}]}`))
	f.Add([]byte(`{"items":[{"collectionId":"c","rows":[{"chain":"solana","contract":"7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU","tokenId":"9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM","overlay":{"price":"5","marketplace":"NATIVE"}}]}],"watermark":"3"}`))
	f.Add([]byte(`{"items":`))
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := source.DecodePage[source.RawGroup](bytes.NewReader(body))
		if err != nil {
			if source.ErrorClass(err) != source.ClassBadPayload {
				t.Fatalf("decode error class %q", source.ErrorClass(err))
			}
		} else {
			for _, g := range p.Items {
				_, _ = normalize.CollectionID(g.CollectionID)
				for _, raw := range g.Rows {
					var rl normalize.RawListing
					if source.DecodeRow(raw, &rl) == nil {
						if r, err := normalize.Listing(readmodel.SourceIndexerMirror, rl, now); err == nil {
							if n, perr := readmodel.ParseRaw(r.PriceRaw); perr != nil || n.String() != r.PriceRaw {
								t.Fatalf("accepted non-canonical price %q", r.PriceRaw)
							}
						}
					}
					var rt normalize.RawToken
					if source.DecodeRow(raw, &rt) == nil {
						_, _ = normalize.Token(rt, now)
					}
				}
			}
		}
		if g, err := source.DecodeGrouped[normalize.RawListing](body); err == nil {
			for _, grp := range g.Items {
				for _, rl := range grp.Rows {
					_, _ = normalize.Listing(readmodel.SourceOrderBook, rl, now)
				}
				for _, e := range grp.Rejects {
					if normalize.ReasonOf(e) == "" {
						t.Fatalf("reject without reason")
					}
				}
			}
		} else if source.ErrorClass(err) != source.ClassBadPayload {
			t.Fatalf("grouped decode error class %q", source.ErrorClass(err))
		}
		if f, _, err := source.DecodeFlat[normalize.RawSale](body); err == nil {
			for _, rs := range f.Items {
				_, _ = normalize.Sale(rs)
			}
		}
		for _, v := range []any{&normalize.RawSale{}, &normalize.RawCollection{}, &normalize.RawStats{}, &normalize.RawAnalytics{}} {
			if source.DecodeRow(body, v) != nil {
				continue
			}
			switch x := v.(type) {
			case *normalize.RawSale:
				_, _ = normalize.Sale(*x)
			case *normalize.RawCollection:
				_, _ = normalize.Collection(*x)
			case *normalize.RawStats:
				_, _, _ = normalize.Stats(*x)
			case *normalize.RawAnalytics:
				_, _, _ = normalize.Analytics(*x)
			}
		}
	})
}
