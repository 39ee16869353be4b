package projector_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/projector"
)

// TestFailingStatusKeepsTheLastGoodTime: a failing poll status that does
// not know when its source last answered well (an ingest that restarted)
// keeps the time the views knew, so the last good rows stay servable for
// the retention after it; one that knows, or a source never good, is
// taken as it comes.
func TestFailingStatusKeepsTheLastGoodTime(t *testing.T) {
	t1 := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		msgs []*readmodel.Message
		want time.Time
	}{
		{name: "after a success", want: t0, msgs: []*readmodel.Message{
			statusMsg(readmodel.SourceCollectionIndex, "", true, t0),
			statusMsg(readmodel.SourceCollectionIndex, "", false, time.Time{}),
		}},
		{name: "after a failure that knew", want: t0, msgs: []*readmodel.Message{
			statusMsg(readmodel.SourceCollectionIndex, "", false, t0),
			statusMsg(readmodel.SourceCollectionIndex, "", false, time.Time{}),
		}},
		{name: "its own time wins", want: t1, msgs: []*readmodel.Message{
			statusMsg(readmodel.SourceCollectionIndex, "", true, t0),
			statusMsg(readmodel.SourceCollectionIndex, "", false, t1),
		}},
		{name: "never good", want: time.Time{}, msgs: []*readmodel.Message{
			statusMsg(readmodel.SourceCollectionIndex, "", false, time.Time{}),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			for _, m := range tc.msgs {
				e.run(m) // one at a time: the state stream keeps a subject's latest only
			}
			st, ok, err := projector.SourceStatus(context.Background(), e.st, readmodel.SourceCollectionIndex, "")
			require.NoError(t, err)
			require.True(t, ok)
			assert.False(t, st.OK)
			assert.True(t, tc.want.Equal(st.LastGoodAt), "last good %v, want %v", st.LastGoodAt, tc.want)
		})
	}
}

// TestRowsObservedAfterAFailureEndIt: a collection carries a poll status
// only while its source fails for it (and once it recovered), so rows of
// the source observed after the failure began say that it answered again:
// the views are healthy again without the recovery's status (a full cycle
// after a purged stream sends rows, not statuses). Rows observed before
// the failure began change nothing. A failure that does not know its last
// good time, of a collection with no status, takes its poll's last
// success.
func TestRowsObservedAfterAFailureEndIt(t *testing.T) {
	const cid, contract = "ethereum_0xabc", "0xabc"
	ob := readmodel.SourceOrderBook
	failing := statusMsg(ob, cid, false, t0) // failing since t0 + 1m
	rowsAt := func(at time.Time, order string) *readmodel.Message {
		m := listingsMsg(ob, cid, evmRow(cid, contract, "1", "5", "NATIVE", order))
		m.ObservedAt = at
		return m
	}
	polled := &readmodel.Message{Kind: readmodel.KindPolled, Source: ob, Polled: &readmodel.Polled{Poll: string(ob), At: t0.Add(-time.Hour)}}
	for _, tc := range []struct {
		name      string
		msgs      []*readmodel.Message
		wantOK    bool
		wantGood  time.Time
		wantStale []readmodel.Source
	}{
		{name: "rows after the failure began", wantOK: true, wantGood: t0.Add(2 * time.Minute),
			msgs: []*readmodel.Message{failing, rowsAt(t0.Add(2*time.Minute), "new")}},
		{name: "rows from before it", wantOK: false, wantGood: t0, wantStale: []readmodel.Source{ob},
			msgs: []*readmodel.Message{failing, rowsAt(t0, "old")}},
		{name: "a failure with no time, no status before: the poll's last success", wantOK: false, wantGood: t0.Add(-time.Hour), wantStale: []readmodel.Source{ob},
			msgs: []*readmodel.Message{polled, rowsAt(t0.Add(-time.Hour), "old"), statusMsg(ob, cid, false, time.Time{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)))
			for _, m := range tc.msgs {
				cp := *m
				cp.ID = ""
				e.run(&cp)
			}
			st, ok, err := projector.SourceStatus(context.Background(), e.st, ob, cid)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, tc.wantOK, st.OK)
			assert.True(t, tc.wantGood.Equal(st.LastGoodAt), "last good %v, want %v", st.LastGoodAt, tc.wantGood)
			v, err := e.st.Listings(context.Background(), cid, 0)
			require.NoError(t, err)
			assert.Equal(t, tc.wantStale, v.StaleSources)
		})
	}
}
