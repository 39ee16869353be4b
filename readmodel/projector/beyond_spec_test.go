package projector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/projector"
)

// What marketd adds beyond SPEC, as the projector prepares it: fees on
// rows and the floor, the listed count past the ceiling, asOf sources,
// change ratios.

func TestListingFees(t *testing.T) {
	const cid, contract = "ethereum_0xfee", "0xfee"
	ask := "1000000000000000000" // 1 ETH
	cases := []struct {
		name      string
		royalty   *int64
		market    string
		wantFees  string
		wantBuyer any
	}{
		{"native row: platform 2 % and the royalty", i64(500), "NATIVE",
			`[{"kind":"platform","bps":200,"amount":{"raw":"20000000000000000","decimal":0.02,"currency":"ETH","usd":null}},
			  {"kind":"royalty","bps":500,"amount":{"raw":"50000000000000000","decimal":0.05,"currency":"ETH","usd":null}}]`,
			"1070000000000000000"},
		{"external row: aggregator 2 % and the royalty", i64(250), "opensea",
			`[{"kind":"aggregator","bps":200,"amount":{"raw":"20000000000000000","decimal":0.02,"currency":"ETH","usd":null}},
			  {"kind":"royalty","bps":250,"amount":{"raw":"25000000000000000","decimal":0.025,"currency":"ETH","usd":null}}]`,
			"1045000000000000000"},
		{"unknown royalty: listed as unknown, no buyer price", nil, "NATIVE",
			`[{"kind":"platform","bps":200,"amount":{"raw":"20000000000000000","decimal":0.02,"currency":"ETH","usd":null}},
			  {"kind":"royalty","bps":null,"amount":null}]`,
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			doc := evmDoc(cid, readmodel.Ethereum, contract)
			doc.RoyaltyBps = tc.royalty
			src := readmodel.SourceOrderBook
			if tc.market != "NATIVE" {
				src = readmodel.SourceIndexerMirror
			}
			e.run(docMsg(doc), listingsMsg(src, cid, evmRow(cid, contract, "1", ask, tc.market, "o1")))

			v, err := e.st.Listings(context.Background(), cid, 0)
			require.NoError(t, err)
			require.Len(t, v.Items, 1)
			row := jsonMap(t, v.Items[0])
			assert.JSONEq(t, tc.wantFees, mustJSON(t, row["fees"]))
			assertBuyer(t, tc.wantBuyer, row["buyerPrice"])

			fv, err := e.st.Floor(context.Background(), cid)
			require.NoError(t, err)
			floor := timed(t, fv.Body, t0)
			assert.JSONEq(t, tc.wantFees, mustJSON(t, floor["fees"]), "the floor's row")
			assertBuyer(t, tc.wantBuyer, floor["buyerPrice"])
			assert.Nil(t, floor["asOf"], "prepared null; the API splices it")
			assert.Contains(t, floor, "asOf")
		})
	}
}

func assertBuyer(t *testing.T, want, got any) {
	t.Helper()
	if want == nil {
		assert.Nil(t, got)
		return
	}
	require.IsType(t, map[string]any{}, got)
	assert.Equal(t, want, got.(map[string]any)["raw"])
}

func TestFloorWithoutRowsHasNoFees(t *testing.T) {
	const cid, contract = "ethereum_0xempty", "0xempty"
	e := mustEnv(t)
	e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)), listingsMsg(readmodel.SourceOrderBook, cid))
	fv, err := e.st.Floor(context.Background(), cid)
	require.NoError(t, err)
	floor := timed(t, fv.Body, t0)
	assert.Contains(t, floor, "fees")
	assert.Nil(t, floor["fees"])
	assert.Nil(t, floor["buyerPrice"])
}

func TestListedCountBeyondTheCeiling(t *testing.T) {
	const cid, contract = "ethereum_0xdeep", "0xdeep"
	cases := []struct {
		name       string
		rows       int
		wantItems  int
		wantBeyond int // cut rows with an expiry
	}{
		{"under the ceiling: nothing cut", 10, 10, 0},
		{"over the ceiling: the cut rows are counted", readmodel.ListingsCeiling + 12, readmodel.ListingsCeiling, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			var rows []readmodel.ListingRow
			for i := 0; i < tc.rows; i++ {
				r := evmRow(cid, contract, fmt.Sprint(i), fmt.Sprint(1000+i), "opensea", fmt.Sprintf("o%04d", i))
				if i%2 == 0 {
					r.ExpiresAt = tp(t0.Add(time.Duration(i+1) * time.Hour))
				}
				rows = append(rows, r)
			}
			e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)), listingsMsg(readmodel.SourceIndexerMirror, cid, rows...))
			v, err := e.st.Listings(context.Background(), cid, 0)
			require.NoError(t, err)
			assert.Len(t, v.Items, tc.wantItems)
			assert.Equal(t, tc.rows, v.Listed)
			assert.Len(t, v.BeyondExpires, tc.wantBeyond)
			assert.IsNonDecreasing(t, v.BeyondExpires)
		})
	}
}

func polledMsg(poll string, at time.Time) *readmodel.Message {
	src, _ := readmodel.ParseSource(poll)
	if src == "" {
		src = readmodel.SourceIndexerMirror
	}
	return &readmodel.Message{Kind: readmodel.KindPolled, Source: src, Polled: &readmodel.Polled{Poll: poll, At: at}}
}

// TestAsOfSources: a view records its sources' last successes; a healthy
// source's moves with later successful polls, a failing one's does not.
func TestAsOfSources(t *testing.T) {
	const cid, contract = "ethereum_0xasof", "0xasof"
	ob, mi := readmodel.SourceOrderBook, readmodel.SourceIndexerMirror
	later := t0.Add(10 * time.Minute)
	cases := []struct {
		name  string
		msgs  []*readmodel.Message
		polls map[string]time.Time
		want  time.Time // zero: null
	}{
		{"both healthy, polled since: the older poll", []*readmodel.Message{
			statusMsg(ob, cid, true, t0), statusMsg(mi, cid, true, t0)},
			map[string]time.Time{string(ob): later, string(mi): later.Add(-time.Minute)}, later.Add(-time.Minute)},
		{"healthy, no poll message yet: unknown", []*readmodel.Message{
			statusMsg(ob, cid, true, t0), statusMsg(mi, cid, true, t0)}, nil, time.Time{}},
		{"the order book failing: its last success, whatever others polled", []*readmodel.Message{
			statusMsg(ob, cid, false, t0.Add(-time.Hour)), statusMsg(mi, cid, true, t0)},
			map[string]time.Time{string(ob): later, string(mi): later}, t0.Add(-time.Hour)},
		{"a source never heard of: unknown", []*readmodel.Message{statusMsg(mi, cid, true, t0)},
			map[string]time.Time{string(mi): later}, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			msgs := append([]*readmodel.Message{docMsg(evmDoc(cid, readmodel.Ethereum, contract)),
				listingsMsg(ob, cid), listingsMsg(mi, cid)}, tc.msgs...)
			for p, at := range tc.polls {
				msgs = append(msgs, polledMsg(p, at))
			}
			e.run(msgs...)
			pt, err := projector.PollTimes(context.Background(), e.st)
			require.NoError(t, err)
			v, err := e.st.Listings(context.Background(), cid, 0)
			require.NoError(t, err)
			var want int64
			if !tc.want.IsZero() {
				want = tc.want.UnixMilli()
			}
			assert.Equal(t, want, v.AsOf.Resolve(&pt))
			fv, err := e.st.Floor(context.Background(), cid)
			require.NoError(t, err)
			assert.Equal(t, want, fv.AsOf.Resolve(&pt), "the floor: no ask floor, the listing sources")
		})
	}
}

func TestPollTimesNeverGoBack(t *testing.T) {
	e := mustEnv(t)
	e.run(polledMsg(readmodel.PollMirrorTokens, t0.Add(time.Hour)))
	e.run(polledMsg(readmodel.PollMirrorTokens, t0))
	pt, err := projector.PollTimes(context.Background(), e.st)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Hour).UnixMilli(), pt[readmodel.PollIndex(readmodel.PollMirrorTokens)])
}

func analyticsMsg(cid string, floorRaw string, v24, v7 float64, at time.Time) *readmodel.Message {
	return &readmodel.Message{Kind: readmodel.KindAnalytics, Source: readmodel.SourceAnalytics, CollectionID: cid, ObservedAt: at,
		Analytics: &readmodel.Analytics{FloorRaw: floorRaw, Volume24h: f64(v24), Volume7d: f64(v7)}}
}

func TestDetailChangeRatios(t *testing.T) {
	const cid, contract = "ethereum_0xchg", "0xchg"
	eth := "1000000000000000000"
	e := mustEnv(t)
	doc := docMsg(evmDoc(cid, readmodel.Ethereum, contract))
	doc.ObservedAt = t0
	e.run(doc, analyticsMsg(cid, eth, 10, 70, t0))
	change := func() map[string]any {
		cv, err := e.st.Collection(context.Background(), cid)
		require.NoError(t, err)
		stats := jsonMap(t, cv.Detail)["stats"].(map[string]any)
		assert.Contains(t, stats, "asOf")
		return stats["change"].(map[string]any)
	}
	assert.JSONEq(t, `{"volume":{"twentyFourHour":null,"sevenDay":null},"floor":{"twentyFourHour":null,"sevenDay":null}}`,
		mustJSON(t, change()), "no past: null, never zero")

	e.run(analyticsMsg(cid, "2000000000000000000", 15, 80, t0.Add(24*time.Hour)))
	assert.JSONEq(t, `{"volume":{"twentyFourHour":0.5,"sevenDay":null},"floor":{"twentyFourHour":1,"sevenDay":null}}`,
		mustJSON(t, change()))

	e.run(analyticsMsg(cid, "500000000000000000", 0, 35, t0.Add(7*24*time.Hour)))
	assert.JSONEq(t, `{"volume":{"twentyFourHour":-1,"sevenDay":-0.5},"floor":{"twentyFourHour":-0.75,"sevenDay":-0.5}}`,
		mustJSON(t, change()), "a day before, the sample then in force (t0+24h); a week before, t0's")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestTokenListingFeesFollowRoyalty: a token's listing carries the same
// fees and buyerPrice as its row in the listings feed, and a collection
// message that changes the royalty changes them on the token at once,
// without a tokens message.
func TestTokenListingFeesFollowRoyalty(t *testing.T) {
	const cid, contract = "ethereum_0xfee", "0xfee"
	e := mustEnv(t)
	doc := evmDoc(cid, readmodel.Ethereum, contract)
	doc.RoyaltyBps = i64(500)
	e.run(docMsg(doc),
		listingsMsg(readmodel.SourceOrderBook, cid, evmRow(cid, contract, "1", "1000000000000000000", "NATIVE", "o1")),
		&readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 3, Tokens: []readmodel.TokenDoc{
			{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: "1", CollectionID: cid},
		}})
	for _, tc := range []struct {
		name      string
		royalty   *int64
		wantFees  string
		wantBuyer any
	}{
		{"royalty 500", i64(500),
			`[{"kind":"platform","bps":200,"amount":{"raw":"20000000000000000","decimal":0.02,"currency":"ETH","usd":null}},
			  {"kind":"royalty","bps":500,"amount":{"raw":"50000000000000000","decimal":0.05,"currency":"ETH","usd":null}}]`,
			"1070000000000000000"},
		{"the collection changes it to 250", i64(250),
			`[{"kind":"platform","bps":200,"amount":{"raw":"20000000000000000","decimal":0.02,"currency":"ETH","usd":null}},
			  {"kind":"royalty","bps":250,"amount":{"raw":"25000000000000000","decimal":0.025,"currency":"ETH","usd":null}}]`,
			"1045000000000000000"},
		{"the collection no longer says", nil,
			`[{"kind":"platform","bps":200,"amount":{"raw":"20000000000000000","decimal":0.02,"currency":"ETH","usd":null}},
			  {"kind":"royalty","bps":null,"amount":null}]`,
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc.RoyaltyBps = tc.royalty
			e.run(docMsg(doc))
			v, err := e.st.Listings(context.Background(), cid, 0)
			require.NoError(t, err)
			require.Len(t, v.Items, 1)
			row := jsonMap(t, v.Items[0])
			assert.JSONEq(t, tc.wantFees, mustJSON(t, row["fees"]), "the listings feed's row")

			tv, err := e.st.Token(context.Background(), readmodel.Ethereum, contract, "1")
			require.NoError(t, err)
			listing, ok := timed(t, tv.Body, t0)["listing"].(map[string]any)
			require.True(t, ok, "the token is listed")
			assert.JSONEq(t, tc.wantFees, mustJSON(t, listing["fees"]), "the token's listing")
			assertBuyer(t, tc.wantBuyer, listing["buyerPrice"])
		})
	}
}
