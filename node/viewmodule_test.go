package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/httpapi"
	"github.com/marketd/marketd/node"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

// listedResponse is the test module's data object.
type listedResponse struct {
	CollectionID string `json:"collectionId"`
	Listed       int    `json:"listed"`
}

// listedPath is where the test module is served.
const listedPath = "/v1/collections/:id/listed"

// mustRegisterListed registers a view module of this test's own: how many
// live listings a collection's snapshot holds, derived after each render
// of its listings, served as it is at listedPath. It is unregistered at
// cleanup.
func mustRegisterListed(t *testing.T) {
	t.Helper()
	render.RegisterView(render.ViewSpec[uint64]{
		Name:   "test listed",
		Family: "v/m/test-listed/",
		Parts:  render.PartListings,
		Derive: func(r *render.Rendered, rec *uint64) (*uint64, bool) {
			n := uint64(len(r.Listings.Rows))
			if rec != nil && *rec == n {
				return rec, false
			}
			return &n, true
		},
		Encode: func(rec *uint64) []byte {
			w := render.RecordWriter{}
			w.Uint(*rec)
			return w.B
		},
		Decode: func(b []byte) (*uint64, error) {
			r := render.NewRecordReader(b)
			n := r.Uint()
			return &n, r.Err()
		},
		Path:    listedPath,
		Summary: "Live listings counted",
		MaxAge:  15,
		Body: func(cid string, _ readmodel.Chain, rec *uint64) []byte {
			resp := listedResponse{CollectionID: cid}
			if rec != nil {
				resp.Listed = int(*rec)
			}
			b, _ := json.Marshal(resp)
			return b
		},
	})
	t.Cleanup(func() { render.UnregisterView("test listed") })
}

// TestViewModuleServedEndToEnd: a view module registered by this test,
// and named nowhere else, is derived by the projector from published
// messages, kept by the store, read through the node's reader and served
// by the API at its route, with an ETag that answers 304 until its record
// changes.
func TestViewModuleServedEndToEnd(t *testing.T) {
	mustRegisterListed(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	vs := node.NewViews(t.TempDir(), js, store.Options{MemTableSize: 16 << 20},
		projector.Options{RowRetention: 10 * time.Minute}, nil, zerolog.Nop())
	require.NoError(t, vs.Open(ctx))
	t.Cleanup(func() {
		assert.NoError(t, vs.Stop(context.Background()))
		assert.NoError(t, vs.CloseStore(context.Background()))
	})
	api, err := httpapi.New(httpapi.Config{}, vs, zerolog.Nop())
	require.NoError(t, err)

	pub := bus.NewPublisher(js)
	const cid, contract = "c1", "0x00aa"
	doc := readmodel.CollectionDoc{ID: cid, Chain: readmodel.Ethereum, ContractAddress: contract, Name: "One", Slug: "one"}
	// listed publishes the order book's rows of n tokens and waits until
	// the views cover them.
	listed := func(n int, extra ...*readmodel.Message) {
		t.Helper()
		rows := make([]readmodel.ListingRow, n)
		for i := range rows {
			tok := fmt.Sprint(i + 1)
			rows[i] = readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: tok, CollectionID: cid,
				PriceRaw: fmt.Sprint(1000 + i), Seller: "0xseller" + tok, Marketplace: "NATIVE", Status: readmodel.StatusActive,
				Timestamp: time.Now().Add(-time.Hour), OrderID: "o" + tok}
		}
		msgs := append(extra, &readmodel.Message{Kind: readmodel.KindListings, Source: readmodel.SourceOrderBook, CollectionID: cid, Listings: rows})
		for i, m := range msgs {
			m.ID, m.ObservedAt = fmt.Sprintf("listed/%d/%d", n, i), time.Now()
			require.NoError(t, pub.Publish(ctx, m))
		}
		pos, err := pub.Flush(ctx)
		require.NoError(t, err)
		require.NoError(t, vs.WaitFor(ctx, pos))
	}
	get := func(path, etag string) (int, string, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := api.App().Test(req, -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header.Get("ETag"), string(b)
	}

	listed(2, &readmodel.Message{Kind: readmodel.KindCollection, Source: readmodel.SourceCollectionIndex, CollectionID: cid, Collection: &doc})
	status, tag, body := get("/v1/collections/one/listed", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.JSONEq(t, `{"data":{"collectionId":"c1","listed":2}}`, body, "the slug resolves; the record is the module's")
	require.NotEmpty(t, tag, "the record's version makes the ETag")
	status, again, body := get("/v1/collections/c1/listed", tag)
	assert.Equal(t, http.StatusNotModified, status, body)
	assert.Equal(t, tag, again)

	listed(3)
	status, next, body := get("/v1/collections/c1/listed", tag)
	require.Equal(t, http.StatusOK, status, "a new record answers its body to the old tag")
	assert.JSONEq(t, `{"data":{"collectionId":"c1","listed":3}}`, body)
	assert.NotEqual(t, tag, next)

	status, _, _ = get("/v1/collections/nope/listed", "")
	assert.Equal(t, http.StatusNotFound, status, "an unresolved id")
}
