package bus_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

func TestSubjectEncodesHostileIDs(t *testing.T) {
	cases := []struct {
		name string
		msg  readmodel.Message
	}{
		{"plain", readmodel.Message{Kind: readmodel.KindListings, Source: readmodel.SourceOrderBook, CollectionID: "ethereum_0xabc"}},
		{"dots and wildcards", readmodel.Message{Kind: readmodel.KindListings, Source: readmodel.SourceOrderBook, CollectionID: "a.b.*.>"}},
		{"spaces and controls", readmodel.Message{Kind: readmodel.KindCollection, CollectionID: "a b\t\r\n\x00"}},
		{"unicode", readmodel.Message{Kind: readmodel.KindStats, CollectionID: "コレクション✓"}},
		{"empty collection", readmodel.Message{Kind: readmodel.KindStatus, Source: readmodel.SourcePriceFeed}},
		{"hostile source", readmodel.Message{Kind: readmodel.KindStatus, Source: "a.b c", CollectionID: "x"}},
		{"tokens bucket", readmodel.Message{Kind: readmodel.KindTokens, CollectionID: "solana_abc", Bucket: 7}},
		{"sales", readmodel.Message{Kind: readmodel.KindSales, CollectionID: "x.>*"}},
		{"long id", readmodel.Message{Kind: readmodel.KindCollection, CollectionID: strings.Repeat("z", 200)}},
	}
	seen := map[string]string{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := bus.Subject(&tc.msg)
			for _, tok := range strings.Split(s, ".") {
				assert.NotEmpty(t, tok, "empty token in %q", s)
				assert.NotContains(t, []string{"*", ">"}, tok)
				for _, r := range tok {
					assert.True(t, r > ' ' && r < 0x7f, "byte %q in subject %q", r, s)
				}
			}
			if tc.msg.Kind == readmodel.KindSales {
				assert.True(t, strings.HasPrefix(s, "marketd.sales."))
			} else {
				assert.True(t, strings.HasPrefix(s, "marketd.state."))
			}
			if prev, dup := seen[s]; dup {
				t.Errorf("subject %q shared with case %q", s, prev)
			}
			seen[s] = tc.name
			got, err := bus.DecodeToken(bus.EncodeToken(tc.msg.CollectionID))
			require.NoError(t, err)
			assert.Equal(t, tc.msg.CollectionID, got)
		})
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	cases := []struct {
		name string
		data string
	}{
		{"not json", "{"},
		{"empty", ""},
		{"no id", `{"kind":"rates","rates":{}}`},
		{"unknown kind", `{"id":"1","kind":"bogus"}`},
		{"kind without payload", `{"id":"1","kind":"collection","collectionId":"x"}`},
		{"listings unknown source", `{"id":"1","kind":"listings","source":"nope","collectionId":"x"}`},
		{"status without status", `{"id":"1","kind":"status","source":"order-book"}`},
		{"zstd magic, then garbage", "\x28\xb5\x2f\xfd" + strings.Repeat("\xff", 64)},
		{"truncated frame", string(mustZstd(t, []byte(validListings))[:20])},
		{"frame holding invalid json", string(mustZstd(t, []byte(`{"id":"1","kind":`)))},
		{"frame over the size bound", string(mustZstd(t, []byte(`{"id":"1","kind":"rates","rates":{},"x":"`+strings.Repeat("x", 9<<20)+`"}`)))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bus.Decode([]byte(tc.data))
			assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err))
		})
	}
	// The frames above are rejected for what they hold, not for being
	// frames: the same valid JSON decodes plain and framed.
	plain, err := bus.Decode([]byte(validListings))
	require.NoError(t, err)
	framed, err := bus.Decode(mustZstd(t, []byte(validListings)))
	require.NoError(t, err)
	assert.Equal(t, plain, framed)
}

const validListings = `{"id":"1","kind":"listings","source":"order-book","collectionId":"x","observedAt":"2026-11-23T00:00:00Z","listings":[{"tokenId":"7","priceRaw":"1000"}]}`

func mustZstd(t *testing.T, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	return enc.EncodeAll(b, nil)
}

// TestWireCompressesLargeStateMessages: a state message of 1 KiB of JSON
// or more goes on the wire in one zstd frame, much smaller, and decodes
// to the message; small state messages and sales stay plain JSON, as
// encoding/json writes them (readable by any consumer and by older nodes).
func TestWireCompressesLargeStateMessages(t *testing.T) {
	obs := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	listings := func(n int) *readmodel.Message {
		m := &readmodel.Message{ID: "l", Kind: readmodel.KindListings, Source: readmodel.SourceOrderBook, CollectionID: "ethereum_0xabc", ObservedAt: obs}
		for i := range n {
			m.Listings = append(m.Listings, readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0xabc", TokenID: fmt.Sprint(i),
				CollectionID: "ethereum_0xabc", PriceRaw: fmt.Sprint(1000 + i), Marketplace: "NATIVE", Status: readmodel.StatusActive, OrderID: fmt.Sprintf("0x%064d", i)})
		}
		return m
	}
	sales := &readmodel.Message{ID: "s", Kind: readmodel.KindSales, CollectionID: "ethereum_0xabc", ObservedAt: obs}
	for i := range 100 {
		sales.Sales = append(sales.Sales, readmodel.SaleRow{OrderID: fmt.Sprintf("0x%064d", i), PriceRaw: "5", TokenID: fmt.Sprint(i)})
	}
	cases := []struct {
		name       string
		msg        *readmodel.Message
		compressed bool
	}{
		{"listings of 100 rows", listings(100), true},
		{"listings of one row", listings(1), false},
		{"status", &readmodel.Message{ID: "st", Kind: readmodel.KindStatus, Source: readmodel.SourcePriceFeed, ObservedAt: obs, Status: &readmodel.PollStatus{OK: true}}, false},
		{"sales of 100 rows", sales, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js, err := json.Marshal(tc.msg)
			require.NoError(t, err)
			wire, err := bus.Encode(tc.msg)
			require.NoError(t, err)
			if tc.compressed {
				assert.True(t, bytes.HasPrefix(wire, []byte{0x28, 0xb5, 0x2f, 0xfd}), "a zstd frame")
				assert.Less(t, len(wire)*3, len(js), "wire %d bytes, JSON %d", len(wire), len(js))
			} else {
				assert.Equal(t, string(js), string(wire))
			}
			got, err := bus.Decode(wire)
			require.NoError(t, err)
			assert.Equal(t, tc.msg, got)
		})
	}
}

// TestStreamsAreCompressed: both streams store their blocks S2-compressed,
// and EnsureStreams turns compression on for streams created before it
// was (an upgraded node), keeping their messages.
func TestEnsureStreamsSetsCompression(t *testing.T) {
	ctx := context.Background()
	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	want := map[string]jetstream.StoreCompression{
		bus.StateStream: jetstream.NoCompression, // removals per publish would decompress blocks
		bus.SalesStream: jetstream.S2Compression,
	}
	for _, cfg := range bus.StreamConfigs(bus.StreamOptions{}) {
		assert.Equal(t, want[cfg.Name], cfg.Compression, cfg.Name)
		// As an older node may have left it: the other way round.
		if cfg.Compression == jetstream.S2Compression {
			cfg.Compression = jetstream.NoCompression
		} else {
			cfg.Compression = jetstream.S2Compression
		}
		_, err := js.UpdateStream(ctx, cfg)
		require.NoError(t, err, "set %s as an older node had it", cfg.Name)
	}
	pub := bus.NewPublisher(js)
	require.NoError(t, pub.Publish(ctx, &readmodel.Message{ID: "r1", Kind: readmodel.KindRates, ObservedAt: time.Unix(1, 0).UTC()}))
	_, err := pub.Flush(ctx)
	require.NoError(t, err)

	require.NoError(t, bus.EnsureStreams(ctx, js, bus.StreamOptions{}))
	for name, c := range want {
		s, err := js.Stream(ctx, name)
		require.NoError(t, err)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		assert.Equal(t, c, info.Config.Compression, name)
		if name == bus.StateStream {
			assert.EqualValues(t, 1, info.State.Msgs, "the message stored before the change is kept")
		}
	}
}

func TestPublishRoundTripAndDedupe(t *testing.T) {
	ctx := context.Background()
	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	require.NoError(t, bus.EnsureStreams(ctx, js, bus.StreamOptions{}), "second EnsureStreams is idempotent")

	obs := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	state := &readmodel.Message{ID: "c1/listings", Kind: readmodel.KindListings, Source: readmodel.SourceOrderBook,
		CollectionID: "a.b*>", ObservedAt: obs,
		Listings: []readmodel.ListingRow{{Chain: readmodel.Ethereum, ContractAddress: "0xabc", TokenID: "1", CollectionID: "a.b*>", PriceRaw: "10", Marketplace: "NATIVE", Status: readmodel.StatusActive}}}
	sale := &readmodel.Message{ID: "c1/sales", Kind: readmodel.KindSales, CollectionID: "a.b*>", ObservedAt: obs,
		Sales: []readmodel.SaleRow{{Chain: readmodel.Ethereum, CollectionID: "a.b*>", PriceRaw: "5", Marketplace: "NATIVE", Tx: "0x1"}}}

	pub := bus.NewPublisher(js)
	require.NoError(t, pub.Publish(ctx, state))
	require.NoError(t, pub.Publish(ctx, sale))
	require.NoError(t, pub.Publish(ctx, state)) // a retry: same Nats-Msg-Id
	pos, err := pub.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, readmodel.Position{State: 1, Sales: 1}, pos)

	for _, tc := range []struct {
		name   string
		stream string
		want   *readmodel.Message
	}{
		{"state", bus.StateStream, state},
		{"sales", bus.SalesStream, sale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := js.Stream(ctx, tc.stream)
			require.NoError(t, err)
			info, err := s.Info(ctx)
			require.NoError(t, err)
			assert.EqualValues(t, 1, info.State.Msgs, "the retried publish was deduplicated")
			raw, err := s.GetMsg(ctx, 1)
			require.NoError(t, err)
			assert.Equal(t, bus.Subject(tc.want), raw.Subject)
			assert.Equal(t, tc.want.ID, raw.Header.Get(jetstream.MsgIDHeader))
			got, err := bus.Decode(raw.Data)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	t.Run("state stream keeps the last value per subject", func(t *testing.T) {
		next := *state
		next.ID = "c2/listings"
		next.Listings = nil
		require.NoError(t, pub.Publish(ctx, &next))
		pos, err := pub.Flush(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 2, pos.State, "a deduplicated publish takes no sequence")
		s, err := js.Stream(ctx, bus.StateStream)
		require.NoError(t, err)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 1, info.State.Msgs)
	})
}

// TestPublishStoresEveryMessageIntact publishes messages of many sizes
// from several goroutines, past the in-flight bound, so the Publisher
// reuses its encode buffers while others are in flight; every stored
// message must still decode to the one published under its id.
func TestPublishStoresEveryMessageIntact(t *testing.T) {
	ctx := context.Background()
	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	pub := bus.NewPublisher(js)
	obs := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	const workers, each = 4, 400
	want := map[string]*readmodel.Message{}
	msgs := make([][]*readmodel.Message, workers)
	for w := range msgs {
		for i := 0; i < each; i++ {
			cid := fmt.Sprintf("c%d-%d", w, i)
			m := &readmodel.Message{ID: cid + "/listings", Kind: readmodel.KindListings, Source: readmodel.SourceOrderBook, CollectionID: cid, ObservedAt: obs}
			for r := 0; r < (i*7+w)%40; r++ {
				m.Listings = append(m.Listings, readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0xabc", TokenID: fmt.Sprint(r),
					CollectionID: cid, PriceRaw: fmt.Sprint(1000 + r), Marketplace: "NATIVE", Status: readmodel.StatusActive, OrderID: strings.Repeat("o", r)})
			}
			msgs[w] = append(msgs[w], m)
			want[m.ID] = m
		}
	}
	errs := make(chan error, workers)
	for w := range msgs {
		go func() {
			for _, m := range msgs[w] {
				if err := pub.Publish(ctx, m); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range msgs {
		require.NoError(t, <-errs)
	}
	pos, err := pub.Flush(ctx)
	require.NoError(t, err)
	require.EqualValues(t, workers*each, pos.State)

	s, err := js.Stream(ctx, bus.StateStream)
	require.NoError(t, err)
	for seq := uint64(1); seq <= pos.State; seq++ {
		raw, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		id := raw.Header.Get(jetstream.MsgIDHeader)
		got, err := bus.Decode(raw.Data)
		require.NoError(t, err, "message %s", id)
		assert.Equal(t, want[id], got, "message %s", id)
	}
}

// TestPublishRejectsOversizedMessage: a message is refused, before it
// reaches the server, when its wire bytes are over the server's max
// payload (1 MiB here) or its JSON is over what consumers decompress.
func TestPublishRejectsOversizedMessage(t *testing.T) {
	ctx := context.Background()
	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	random := make([]byte, 3<<20)
	_, _ = rand.New(rand.NewSource(1)).Read(random)
	cases := []struct {
		name        string
		description string
	}{
		{"wire over the max payload (incompressible)", base64.StdEncoding.EncodeToString(random)},
		{"JSON over the decode bound (compresses below the payload)", strings.Repeat("x", 9<<20)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			big := &readmodel.Message{ID: "big", Kind: readmodel.KindCollection, CollectionID: "c",
				Collection: &readmodel.CollectionDoc{ID: "c", Description: tc.description}}
			err := bus.NewPublisher(js).Publish(ctx, big)
			assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err))
		})
	}
}

func TestStreamConfigsDocumentedDurability(t *testing.T) {
	cfgs := bus.StreamConfigs(bus.StreamOptions{Replicas: 3})
	require.Len(t, cfgs, 2)
	assert.EqualValues(t, 1, cfgs[0].MaxMsgsPerSubject, "state stream is compacted")
	assert.Equal(t, jetstream.NoCompression, cfgs[0].Compression, "the state stream is uncompressed, as the README documents")
	assert.Equal(t, jetstream.S2Compression, cfgs[1].Compression, "the sales stream is compressed, as the README documents")
	for _, c := range cfgs {
		assert.Equal(t, 3, c.Replicas)
		assert.Equal(t, 2*time.Minute, c.Duplicates, "the dedupe window the README documents")
		assert.Greater(t, c.Duplicates, bus.RetryBudget+bus.RetryWait, "dedupe window above a publish's retries")
	}
}
