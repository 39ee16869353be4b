package projector_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// TestFloorHistoryObserved: each render of a collection's floor is an
// observation of its askFloor at the time of the messages behind it, and
// the history summarises them per hour and per day; a render with no ask
// floor adds nothing.
func TestFloorHistoryObserved(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	const id = "ethereum_0x00aa"
	doc := evmDoc(id, readmodel.Ethereum, "0x00aa")
	at := time.Date(2026, 11, 22, 10, 5, 0, 0, time.UTC)
	floorAt := func(when time.Time, raw string) {
		d := doc
		d.FloorRaw = raw
		m, l := docMsg(d), listingsMsg(readmodel.SourceOrderBook, id, evmRow(id, "0x00aa", "1", "900", "NATIVE", "o1"))
		m.ObservedAt, l.ObservedAt = when, when
		e.run(m, l)
	}
	floorAt(at, "1000000000000000000")
	floorAt(at.Add(10*time.Minute), "1200000000000000000")
	floorAt(at.Add(20*time.Minute), "800000000000000000")
	floorAt(at.Add(2*time.Hour), "900000000000000000")
	floorAt(at.Add(3*time.Hour), "") // no ask floor: nothing observed

	v, err := e.st.ReadView(ctx, render.FloorHistoryView.Name(), id)
	require.NoError(t, err)
	h := render.FloorHistoryView.Record(v)
	require.NotNil(t, h)
	assert.NotZero(t, v.Version)
	hour := at.Truncate(time.Hour)
	assert.Equal(t, []render.FloorBucket{
		{Start: hour.Unix(), Open: "1000000000000000000", High: "1200000000000000000", Low: "800000000000000000", Close: "800000000000000000"},
		{Start: hour.Add(2 * time.Hour).Unix(), Open: "900000000000000000", High: "900000000000000000", Low: "900000000000000000", Close: "900000000000000000"},
	}, h.Hours)
	assert.Equal(t, []render.FloorBucket{
		{Start: at.Truncate(24 * time.Hour).Unix(), Open: "1000000000000000000", High: "1200000000000000000", Low: "800000000000000000", Close: "900000000000000000"},
	}, h.Days)
}
