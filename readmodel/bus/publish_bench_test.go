package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

// BenchmarkPublish publishes a 100-token bucket per op to an embedded
// server, flushing every 256: what ingest does in a first cycle.
func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	js := bustest.MustConnect(b, bustest.MustStartServer(b), 1)
	pub := bus.NewPublisher(js)
	obs := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	cid := "ethereum_0x00d4c4f92c531aff8ebfa8ea4ebc50b7dd467876"
	m := &readmodel.Message{Kind: readmodel.KindTokens, Source: readmodel.SourceIndexerMirror, CollectionID: cid, ObservedAt: obs}
	for i := 0; i < 100; i++ {
		id := fmt.Sprint(i)
		m.Tokens = append(m.Tokens, readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: "0x00d4c4f92c531aff8ebfa8ea4ebc50b7dd467876",
			TokenID: id, CollectionID: cid, Name: "Tiny Apes #" + id, Image: "https://img.sim.marketd.test/60/" + id + ".png",
			OwnerAddress: "0xd2e5126673172d95522b3ad6c878ed883e7cac28"})
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		m.ID = fmt.Sprint("bench/", n)
		m.Bucket = uint32(n % 64)
		if err := pub.Publish(ctx, m); err != nil {
			b.Fatal(err)
		}
		if n++; n%256 == 0 {
			if _, err := pub.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pub.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}
