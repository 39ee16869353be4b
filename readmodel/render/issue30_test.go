package render

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

func TestFeesOf(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name      string
		chain     readmodel.Chain
		market    string
		ask       string
		royalty   *int64
		wantKinds []string
		wantRaw   []string // amounts; "" for null
		wantBuyer string   // "" for null
	}{
		{"native solana: 3 % and royalty", readmodel.Solana, "NATIVE", "1000000000", i64(500), []string{"platform", "royalty"}, []string{"30000000", "50000000"}, "1080000000"},
		{"native EVM: 2 %", readmodel.Base, "NATIVE", "100", i64(0), []string{"platform", "royalty"}, []string{"2", "0"}, "102"},
		{"external: aggregator 2 %", readmodel.Ethereum, "blur", "100", i64(100), []string{"aggregator", "royalty"}, []string{"2", "1"}, "103"},
		{"each charge rounds up to a base unit", readmodel.Ethereum, "NATIVE", "101", i64(1), []string{"platform", "royalty"}, []string{"3", "1"}, "105"},
		{"unknown royalty: no total", readmodel.Solana, "tensor", "1000", nil, []string{"aggregator", "royalty"}, []string{"20", ""}, ""},
		{"a negative royalty charges nothing", readmodel.Ethereum, "NATIVE", "100", i64(-5), []string{"platform", "royalty"}, []string{"2", "0"}, "102"},
		{"an ask past 64 bits: exact big-integer arithmetic", readmodel.Ethereum, "NATIVE", "123456789012345678901234567", i64(333),
			[]string{"platform", "royalty"}, []string{"2469135780246913578024692", "4111111074111111107411112"}, "130037035866703703586670371"},
		{"an ask at the top of 64 bits: the sum overflows, big integers take over", readmodel.Ethereum, "NATIVE", "18446744073709551615", i64(0),
			[]string{"platform", "royalty"}, []string{"368934881474191033", "0"}, "18815678955183742648"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &readmodel.ListingRow{Chain: tc.chain, PriceRaw: tc.ask, Marketplace: tc.market}
			f, ok := FeesOf(tc.chain, r, tc.royalty, nil)
			require.True(t, ok)
			var kinds, raws []string
			for _, fe := range f.List {
				kinds = append(kinds, fe.Kind)
				if !fe.Known {
					raws = append(raws, "")
				} else {
					raws = append(raws, fe.Amount.Raw)
				}
			}
			assert.Equal(t, tc.wantKinds, kinds)
			assert.Equal(t, tc.wantRaw, raws)
			if tc.wantBuyer == "" {
				assert.False(t, f.BuyerKnown)
			} else {
				require.True(t, f.BuyerKnown)
				assert.Equal(t, tc.wantBuyer, f.Buyer.Raw)
			}
		})
	}
	_, ok := FeesOf(readmodel.Ethereum, &readmodel.ListingRow{PriceRaw: "1e5"}, nil, nil)
	assert.False(t, ok, "an uninterpretable ask has no fees")
}

// TestListingRowJSON: the row is its MarketItem followed by fees and
// buyerPrice, valid JSON, prices templated like every other.
func TestListingRowJSON(t *testing.T) {
	bps := int64(250)
	r := &readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0xa", TokenID: "1", CollectionID: "c",
		PriceRaw: "1000000000000000000", Marketplace: "NATIVE", Status: readmodel.StatusActive, OrderID: "o"}
	b, ok := ListingRowJSON(r, &bps, nil, time.Unix(0, 0))
	require.True(t, ok)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	item, _ := ListingItem(r, nil, time.Unix(0, 0))
	assert.Equal(t, string(MarshalItem(item)[:len(MarshalItem(item))-1]), string(b[:len(MarshalItem(item))-1]), "the MarketItem first, unchanged")
	assert.Equal(t, "1045000000000000000", m["buyerPrice"].(map[string]any)["raw"])
	assert.Equal(t, 4, countUSDSlots(TemplateUSD(b)), "price, two fees and buyerPrice get USD slots")
}

func countUSDSlots(b []byte) int {
	n := 0
	for {
		i := NextUSDSlot(b)
		if i < 0 {
			return n
		}
		n++
		b = b[i+usdSlotLen:]
	}
}

func TestFreshnessResolve(t *testing.T) {
	ob, mi := string(readmodel.SourceOrderBook), string(readmodel.SourceIndexerMirror)
	at := func(m int64) time.Time { return time.UnixMilli(m) }
	var pt PollTimes
	pt[readmodel.PollIndex(ob)] = 5000
	pt[readmodel.PollIndex(mi)] = 7000
	cases := []struct {
		name string
		add  func(f *Freshness)
		want int64
	}{
		{"no source: unknown", func(f *Freshness) {}, 0},
		{"healthy sources: the older poll", func(f *Freshness) { f.Add(ob, nil); f.Add(mi, &readmodel.PollStatus{OK: true, LastGoodAt: at(9000)}) }, 5000},
		{"a failing source: its last success", func(f *Freshness) {
			f.Add(ob, &readmodel.PollStatus{OK: false, LastGoodAt: at(3000)})
			f.Add(mi, nil)
		}, 3000},
		{"failing, never succeeded: unknown", func(f *Freshness) { f.Add(ob, &readmodel.PollStatus{OK: false}) }, 0},
		{"healthy, never polled: unknown", func(f *Freshness) { f.Add(string(readmodel.SourceAnalytics), nil) }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f Freshness
			tc.add(&f)
			assert.Equal(t, tc.want, f.Resolve(&pt))
		})
	}
}

func TestSpliceAsOf(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		maxTail int
		want    string // body with asOf 1000 ms spliced; "" when no slot
	}{
		{"last field", `{"a":1,"asOf":null}`, 1, `{"a":1,"asOf":"1970-01-01T00:00:01.000Z"}`},
		{"inside stats", `{"stats":{"asOf":null},"stale":false}`, 16, `{"stats":{"asOf":"1970-01-01T00:00:01.000Z"},"stale":false}`},
		{"too far from the end", `{"asOf":null,"b":"xxxxxxxxxxxxxxxxxxxx"}`, 1, ""},
		{"none", `{"a":1}`, 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.body)
			at, ok := SpliceAsOf(b, tc.maxTail)
			if tc.want == "" {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			out := append(AppendAsOf(append([]byte(nil), b[:at]...), 1000), b[at+4:]...)
			assert.Equal(t, tc.want, string(out))
		})
	}
}

func TestHistoryChanges(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	t0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	var h History
	h = h.Record(NewSample(t0, f(2), f(10), f(100)))
	assert.Equal(t, Changes{}, h.ChangesOf(), "one sample: every side before it unknown")

	h = h.Record(NewSample(t0.Add(Day), f(3), f(0), nil))
	c := h.ChangesOf()
	require.NotNil(t, c.Floor24h)
	assert.InDelta(t, 0.5, *c.Floor24h, 1e-9)
	assert.InDelta(t, -1.0, *c.Volume24h, 1e-9)
	assert.Nil(t, c.Volume7d, "unknown now: null")
	assert.Nil(t, c.Floor7d, "nothing a week before")

	h = h.Record(NewSample(t0.Add(2*Day), f(3), f(4), f(1)))
	assert.Nil(t, h.ChangesOf().Volume24h, "then zero: null, not infinite")
}

// TestHistoryIsBounded: a sample every two minutes for three weeks keeps
// a small record that still answers both look-backs.
func TestHistoryIsBounded(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	var h History
	most := 0
	for i := 0; i < 3*7*24*30; i++ {
		v := float64(i)
		h = h.Record(NewSample(t0.Add(time.Duration(i)*2*time.Minute), &v, &v, &v))
		most = max(most, len(h))
	}
	assert.LessOrEqual(t, most, 45, "bounded")
	assert.LessOrEqual(t, len(h.Encode()), 45*32)
	c := h.ChangesOf()
	require.NotNil(t, c.Floor24h)
	require.NotNil(t, c.Floor7d)
	last := float64(3*7*24*30 - 1)
	dayAgo := last - 24*30
	weekAgo := last - 7*24*30
	assert.InDelta(t, last/dayAgo-1, *c.Floor24h, last/dayAgo*0.01, "within the hour's resolution")
	assert.InDelta(t, last/weekAgo-1, *c.Floor7d, last/weekAgo*0.05, "within 12 hours' resolution")
	assert.Equal(t, h, DecodeHistory(h.Encode()))
	unknown := History{NewSample(time.Unix(0, 0), nil, nil, nil)}
	assert.True(t, math.IsNaN(DecodeHistory(unknown.Encode())[0].Vol7d), "unknown survives the record")
	t.Logf("at most %d samples, %d bytes", most, len(h.Encode()))
}

// BenchmarkListingRow: a listing row as the projector renders it, with
// and without its fees (what issue 30 adds to every listings render).
func BenchmarkListingRow(b *testing.B) {
	bps := int64(500)
	r := &readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0x1111111111111111111111111111111111111111", TokenID: "1234",
		CollectionID: "ethereum_0x1111111111111111111111111111111111111111", PriceRaw: "16614000000730570453", Seller: "0x8e8f0500b74c8f81342a3503e51a926983ffaa7d",
		Marketplace: "NATIVE", Status: readmodel.StatusActive, Timestamp: time.Unix(1700000000, 0), OrderID: "ethereum_0x1111111111111111111111111111111111111111_1234_1700000000000"}
	b.Run("item", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			it, _ := ListingItem(r, nil, time.Time{})
			_ = TemplateUSD(MarshalItem(it))
		}
	})
	b.Run("item+fees", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			row, _ := ListingRowJSON(r, &bps, nil, time.Time{})
			_ = TemplateUSD(row)
		}
	})
}
