package bus

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// tokensMessage is a bucket of 100 token documents, each with an overlay
// listing, the shape that dominates a large market's first cycle.
func tokensMessage() *readmodel.Message {
	obs := time.Date(2026, 11, 23, 2, 0, 0, 123, time.UTC)
	cid := "ethereum_0x00d4c4f92c531aff8ebfa8ea4ebc50b7dd467876"
	addr := "0x00d4c4f92c531aff8ebfa8ea4ebc50b7dd467876"
	owner := "0xd2e5126673172d95522b3ad6c878ed883e7cac28"
	m := &readmodel.Message{ID: "1795381853765566523/tokens/indexer-mirror/" + cid + "/0", Kind: readmodel.KindTokens,
		Source: readmodel.SourceIndexerMirror, CollectionID: cid, ObservedAt: obs}
	rank := int64(5)
	for i := 0; i < 100; i++ {
		exp := obs.Add(time.Hour)
		id := strconv.Itoa(i)
		m.Tokens = append(m.Tokens, readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: addr, TokenID: id, CollectionID: cid,
			Name: "Tiny Apes #" + id, Image: "https://img.sim.marketd.test/60/" + id + ".png", RarityRank: &rank, OwnerAddress: owner,
			Overlay: &readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: addr, TokenID: id, CollectionID: cid,
				PriceRaw: "27567678000519850896", Seller: owner, Marketplace: "opensea", Status: readmodel.StatusActive,
				ExpiresAt: &exp, Timestamp: obs, OrderID: "0xabc" + id}})
	}
	return m
}

// BenchmarkEncode is Encode of a 100-token bucket.
func BenchmarkEncode(b *testing.B) {
	m := tokensMessage()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeStd is the same message through encoding/json, what
// Encode used before: the baseline Encode is measured against.
func BenchmarkEncodeStd(b *testing.B) {
	m := tokensMessage()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}
