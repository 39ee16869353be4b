package projector_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

func TestBadInputIsSkippedNotFatal(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	for _, raw := range []struct{ subject, data string }{
		{"marketd.state.collection.-.x", "not json"},
		{"marketd.state.collection.-.y", `{"id":"1","kind":"collection"}`},
		{"marketd.sales.z", `{"id":"2","kind":"rates","rates":{}}`}, // a state kind on the sales stream
		{"marketd.state.listings.order-book.w", `{"id":"3","kind":"listings","source":"order-book","collectionId":"w","listings":[{"chain":"ethereum","priceRaw":"` + strings.Repeat("9", 500) + `","status":"active"}]}`},
	} {
		_, err := e.js.Publish(ctx, raw.subject, []byte(raw.data))
		require.NoError(t, err)
	}
	hostile := "x.y*>\x00 ü/" + strings.Repeat("z", 150)
	e.run(docMsg(readmodel.CollectionDoc{ID: hostile, Chain: readmodel.Ethereum, ContractAddress: "0xh", Slug: hostile}))

	v, err := e.st.Collection(ctx, hostile)
	require.NoError(t, err, "messages after bad ones still apply")
	assert.Equal(t, hostile, jsonMap(t, v.Detail)["id"])
	got, err := e.st.ResolveCollection(ctx, hostile)
	require.NoError(t, err)
	assert.Equal(t, hostile, got)
	l, err := e.st.Listings(ctx, "w", 0)
	require.NoError(t, err)
	assert.Empty(t, l.Items, "an over-long raw price is dropped")
	assert.Positive(t, e.p.Applied().Sales, "the misplaced message advanced the sales position")
}
