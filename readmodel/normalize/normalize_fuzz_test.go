package normalize

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// FuzzNormalizeListing feeds arbitrary upstream JSON to the listing, sale
// and token normalizers: they must never panic, and every accepted row must
// satisfy SPEC §2's invariants.
func FuzzNormalizeListing(f *testing.F) {
	f.Add([]byte(`{"chain":"ethereum","contract":"0xAbCdEf0123456789aBcDeF0123456789ABCDEF01","tokenId":"1","price":"9007199254740993123"}`))
	f.Add([]byte(`{"chain":"solana","mint":"7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU","collectionId":"C","price":1,"marketplace":"native","orderId":"brand:x_1"}`))
	f.Add([]byte(`{"chain":"base","contract":"0x","tokenId":"-1","price":-1.5,"expiresAt":"nope"}`))
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, b []byte) {
		var in RawListing
		if json.Unmarshal(b, &in) != nil {
			return
		}
		for _, src := range []readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror} {
			r, err := Listing(src, in, now)
			if err != nil {
				if ReasonOf(err) == "" {
					t.Fatalf("error without reason: %v", err)
				}
				continue
			}
			checkRow(t, r.Chain, r.ContractAddress, r.CollectionID, r.PriceRaw)
			if r.ExpiresAt != nil && !r.ExpiresAt.After(now) {
				t.Fatalf("expired row accepted")
			}
		}
		var s RawSale
		if json.Unmarshal(b, &s) == nil {
			if r, err := Sale(s); err == nil {
				checkRow(t, r.Chain, r.ContractAddress, r.CollectionID, r.PriceRaw)
			}
		}
		var tok RawToken
		if json.Unmarshal(b, &tok) == nil {
			_, _ = Token(tok, now)
		}
		var c RawCollection
		if json.Unmarshal(b, &c) == nil {
			if d, err := Collection(c); err == nil && d.ID != strings.ToLower(d.ID) {
				t.Fatalf("collection id not lowercase: %q", d.ID)
			}
		}
	})
}

func checkRow(t *testing.T, c readmodel.Chain, contract, collectionID, raw string) {
	t.Helper()
	if !c.Valid() {
		t.Fatalf("invalid chain %q accepted", c)
	}
	if c.IsEVM() && contract != strings.ToLower(contract) {
		t.Fatalf("EVM contract not lowercase: %q", contract)
	}
	if collectionID != strings.ToLower(collectionID) {
		t.Fatalf("collection id not lowercase: %q", collectionID)
	}
	if n, err := readmodel.ParseRaw(raw); err != nil || n.String() != raw {
		t.Fatalf("raw %q not canonical", raw)
	}
}
