package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// fakeReader is an in-memory Reader. Tests fill its maps; errs overrides a
// method's answer by method name. It counts calls per method.
type fakeReader struct {
	mu          sync.Mutex
	aliases     map[string]string // any {id} form → canonical
	collections map[string]render.CollectionView
	floors      map[string]render.FloorView
	// floorHistory holds the floor histories (the view module's records)
	// by canonical id (none: never observed); views those of the other
	// modules, by name and id ("name|id").
	floorHistory map[string]render.ViewValue
	views        map[string]render.ViewValue
	// listings holds every version still "held" per collection; current is
	// the highest.
	listings map[string]map[uint64]render.ListingsView
	current  map[string]uint64
	sales    map[string][][]byte // oldest first; positions are sale indexes
	salesVer uint64
	pageUSD  uint64 // USD quote version of every page
	// salesDrop empties every page's items (rows dropped after the window
	// was cut, SPEC sales rule 2) while keeping the position.
	salesDrop bool
	browse    map[string][][]byte // key sort|chain
	browseVer uint64              // the version of every browse page
	tokens    map[string]render.TokenView
	// tokensUnversioned makes TokensVersion answer not ok, as views
	// being rebuilt do.
	tokensUnversioned bool
	// viewsVer is ViewsVersion's answer once viewsVersioned is set (the
	// response memo's tests, prepared_test.go): a test that changes what
	// the fake holds bumps it, as a store's commit does.
	viewsVersioned bool
	viewsVer       uint64
	feeds          map[string]*fakeFeed // change feeds by canonical id (events_test.go)
	market         fakeMarket           // the market's feed (marketevents_test.go)
	errs           map[string]error
	calls          map[string]int

	index *readmodel.PollStatus // the collection index's poll status; nil: none applied
	polls render.PollTimes      // when each poll last succeeded (PollClock)

	lastBrowse [2]string // sort, chain of the last Browse
	lastToken  [3]string
}

func newFakeReader() *fakeReader {
	return &fakeReader{
		aliases:      map[string]string{},
		collections:  map[string]render.CollectionView{},
		floors:       map[string]render.FloorView{},
		floorHistory: map[string]render.ViewValue{},
		views:        map[string]render.ViewValue{},
		listings:     map[string]map[uint64]render.ListingsView{},
		current:      map[string]uint64{},
		sales:        map[string][][]byte{},
		salesVer:     1,
		browse:       map[string][][]byte{},
		browseVer:    7,
		tokens:       map[string]render.TokenView{},
		errs:         map[string]error{},
		calls:        map[string]int{},
	}
}

func (f *fakeReader) enter(m string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[m]++
	return f.errs[m]
}

func (f *fakeReader) count(m string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[m]
}

func (f *fakeReader) setErr(m string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[m] = err
}

func (f *fakeReader) ResolveCollection(_ context.Context, id string) (string, error) {
	if err := f.enter("ResolveCollection"); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.aliases[id]; ok {
		return c, nil
	}
	if _, ok := f.collections[id]; ok {
		return id, nil
	}
	return "", readmodel.Errorf(readmodel.NotFound, "collection %q not found", id)
}

func (f *fakeReader) Collection(_ context.Context, id string) (render.CollectionView, error) {
	if err := f.enter("Collection"); err != nil {
		return render.CollectionView{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cv, ok := f.collections[id]
	if !ok {
		return cv, readmodel.Errorf(readmodel.NotFound, "collection not found")
	}
	return cv, nil
}

func (f *fakeReader) Floor(_ context.Context, id string) (render.FloorView, error) {
	if err := f.enter("Floor"); err != nil {
		return render.FloorView{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fv, ok := f.floors[id]
	if !ok {
		return fv, readmodel.Errorf(readmodel.NotFound, "no floor")
	}
	return fv, nil
}

func (f *fakeReader) View(_ context.Context, name, id string) (render.ViewValue, error) {
	if err := f.enter("View"); err != nil {
		return render.ViewValue{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == render.FloorHistoryView.Name() {
		return f.floorHistory[id], nil
	}
	return f.views[name+"|"+id], nil
}

func (f *fakeReader) Listings(_ context.Context, id string, version uint64) (render.ListingsView, error) {
	if err := f.enter("Listings"); err != nil {
		return render.ListingsView{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	held := f.listings[id]
	if lv, ok := held[version]; ok && version != 0 {
		return lv, nil
	}
	return held[f.current[id]], nil
}

// putListings stores a new snapshot version of id and makes it current.
func (f *fakeReader) putListings(id string, lv render.ListingsView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listings[id] == nil {
		f.listings[id] = map[uint64]render.ListingsView{}
	}
	f.listings[id][lv.Version] = lv
	f.current[id] = lv.Version
}

func (f *fakeReader) dropListingsVersion(id string, v uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.listings[id], v)
}

// Sales pages newest first; the position is the index of the next (older)
// sale to serve, "s<n>".
func (f *fakeReader) Sales(_ context.Context, id string, after string, limit int) (render.Page, error) {
	if err := f.enter("Sales"); err != nil {
		return render.Page{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	all := f.sales[id]
	start := len(all) - 1
	if after != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(after, "s"))
		if !strings.HasPrefix(after, "s") || err != nil || n < 0 || n >= len(all) {
			return render.Page{}, readmodel.Errorf(readmodel.BadRequest, "sales cursor position no longer resolves")
		}
		start = n
	}
	p := render.Page{Version: f.salesVer, USD: f.pageUSD}
	i := start
	for ; i >= 0 && len(p.Items) < limit; i-- {
		p.Items = append(p.Items, all[i])
	}
	if i >= 0 {
		p.HasMore, p.Next = true, "s"+strconv.Itoa(i)
	}
	if f.salesDrop {
		p.Items = nil
	}
	return p, nil
}

func (f *fakeReader) Browse(_ context.Context, sort readmodel.Sort, chain readmodel.Chain, after string, limit int) (render.Page, error) {
	if err := f.enter("Browse"); err != nil {
		return render.Page{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastBrowse = [2]string{string(sort), string(chain)}
	all := f.browse[string(sort)+"|"+string(chain)]
	start := 0
	if after != "" {
		n, err := strconv.Atoi(after)
		if err != nil || n < 0 || n > len(all) {
			return render.Page{}, readmodel.Errorf(readmodel.BadRequest, "bad position")
		}
		start = n
	}
	end := min(start+limit, len(all))
	p := render.Page{Version: f.browseVer, USD: f.pageUSD, Items: all[start:end]}
	if end < len(all) {
		p.HasMore, p.Next = true, strconv.Itoa(end)
	}
	return p, nil
}

func (f *fakeReader) CollectionIndexStatus(context.Context) (readmodel.PollStatus, bool, error) {
	if err := f.enter("CollectionIndexStatus"); err != nil {
		return readmodel.PollStatus{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.index == nil {
		return readmodel.PollStatus{}, false, nil
	}
	return *f.index, true, nil
}

// PollTimes implements PollClock: what the test set (tests set it
// between requests).
func (f *fakeReader) PollTimes(context.Context) *render.PollTimes { return &f.polls }

func (f *fakeReader) Token(_ context.Context, chain readmodel.Chain, address, tokenID string) (render.TokenView, error) {
	if err := f.enter("Token"); err != nil {
		return render.TokenView{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastToken = [3]string{string(chain), address, tokenID}
	tv, ok := f.tokens[readmodel.TokenKey(chain, address, tokenID)]
	if !ok {
		return tv, readmodel.Errorf(readmodel.NotFound, "token not indexed")
	}
	return tv, nil
}

// TokensVersion is TokensVersioner, derived from what the fake holds: a
// token stored, removed or given another version or body changes it (tests
// set f.tokens directly), as a store's commit moves its own.
func (f *fakeReader) TokensVersion() (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tokensUnversioned {
		return 0, false
	}
	var sum uint64
	for k, tv := range f.tokens {
		h := fnv.New64a()
		h.Write([]byte(k))
		h.Write(tv.Body.Head)
		h.Write(tv.Body.Tail)
		sum += h.Sum64() ^ tv.Version ^ tv.USD<<32 // order-free: map order is random
	}
	return sum, true
}

// ViewsVersion is ViewsVersioner: not ok unless a test set
// viewsVersioned, so that only the response memo's own tests run with it.
func (f *fakeReader) ViewsVersion() (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.viewsVer, f.viewsVersioned
}

// ---- fixtures ----

func ptr[T any](v T) *T { return &v }

// evmItem is a pre-encoded native EVM listing MarketItem.
func evmItem(collection, contract string, tokenID int, priceWei string, decimal float64, orderID string) []byte {
	it := readmodel.MarketItem{
		Chain: readmodel.Ethereum, ContractAddress: ptr(contract), TokenID: ptr(strconv.Itoa(tokenID)),
		CollectionID: collection,
		Price:        readmodel.Price{Raw: priceWei, Decimal: decimal, Currency: "ETH", USD: ptr(decimal * 3000)},
		Seller:       ptr("0x00000000000000000000000000000000000000aa"),
		Marketplace:  readmodel.MarketplaceNative, Status: readmodel.StatusActive,
		Timestamp: "2026-11-01T00:00:00.000Z", OrderID: ptr(orderID),
	}
	b, err := json.Marshal(it)
	if err != nil {
		panic(err)
	}
	return b
}

// withFees is item as a row of the listings feed, which carries its fees
// and buyerPrice after the MarketItem's fields (render.ListingRowJSON); this
// collection's royalty is unknown, so buyerPrice is null.
func withFees(item []byte) []byte {
	return append(item[:len(item)-1], `,"fees":[{"kind":"platform","bps":200,"amount":{"raw":"20","decimal":2e-17,"currency":"ETH","usd":null}},{"kind":"royalty","bps":null,"amount":null}],"buyerPrice":null}`...)
}

// saleItem is a pre-encoded sale MarketItem.
func saleItem(collection string, n int) []byte {
	it := readmodel.MarketItem{
		Chain: readmodel.Ethereum, ContractAddress: ptr(testContract), TokenID: ptr(strconv.Itoa(n)),
		CollectionID: collection,
		Price:        readmodel.Price{Raw: "1000000000000000000", Decimal: 1, Currency: "ETH"},
		Seller:       ptr("0x00000000000000000000000000000000000000aa"), Buyer: ptr("0x00000000000000000000000000000000000000bb"),
		Marketplace: "opensea", Status: readmodel.StatusSold,
		Timestamp: "2026-11-01T00:00:00.000Z", OrderID: nil, Tx: ptr(fmt.Sprintf("0x%064x", n)),
	}
	b, _ := json.Marshal(it)
	return b
}

func summaryItem(id string, n int) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"chain":"ethereum","contractAddress":null,"name":"C%d","slug":null,"image":null,"banner":null,"description":null,"tokenStandard":null,"royaltyBps":500,"stats":{"floor":null,"volumeAllTime":%d,"supply":null,"owners":null}}`, id, n, n))
}

const (
	testID       = "ethereum_0x1111111111111111111111111111111111111111"
	testContract = "0x1111111111111111111111111111111111111111"
	testSlug     = "cool-cats"
	noChainID    = "nochain_x"
	noContractID = "ethereum_nocontract"
	solMint      = "J1S9H3QjnRtBbbuD4HjPV6RpRhwuk4zKbxsnCHuTgh9w"
	solAsset     = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"
)

var detailJSON = []byte(`{"id":"` + testID + `","chain":"ethereum","contractAddress":"` + testContract + `","name":"Cool","slug":"cool-cats","image":null,"banner":null,"description":null,"tokenStandard":"ERC721","royaltyBps":500,"stats":{"floor":{"raw":"1000000000000000000","decimal":1,"currency":"ETH","usd":null},"volume":{"allTime":10,"sevenDay":null,"twentyFourHour":null},"sales":{"allTime":3,"sevenDay":null,"twentyFourHour":null},"supply":100,"owners":null,"listedCount":null,"change":{"volume":{"twentyFourHour":null,"sevenDay":null},"floor":{"twentyFourHour":0.5,"sevenDay":null}},"asOf":null},"stale":false}`)

func floorBody(id string, buyer string, stale bool) render.TimedBody {
	bf := "null"
	if buyer != "" {
		bf = `{"raw":"` + buyer + `","decimal":1.05,"currency":"ETH","usd":null}`
	}
	return render.TimedBody{
		Head:  []byte(`{"collectionId":"` + id + `","askFloor":{"raw":"1000000000000000000","decimal":1,"currency":"ETH","usd":3000},"buyerFloor":` + bf + `,"aggregated":true,"updatedAt":"`),
		Tail:  []byte(`","stale":` + strconv.FormatBool(stale) + `,"fees":null,"buyerPrice":null,"asOf":null}`),
		Timed: true,
	}
}

// seed fills r with one healthy EVM collection (testID, alias testSlug and
// the contract), one without a chain and one without a contract.
func seed(r *fakeReader) {
	r.aliases[testSlug] = testID
	r.aliases[testContract] = testID
	r.collections[testID] = render.CollectionView{ID: testID, Chain: readmodel.Ethereum, HasContract: true, Version: 3, Detail: detailJSON}
	r.collections[noChainID] = render.CollectionView{ID: noChainID, Chain: "", HasContract: true, Version: 1, Detail: bytes.ReplaceAll(detailJSON, []byte(`"chain":"ethereum"`), []byte(`"chain":null`))}
	r.collections[noContractID] = render.CollectionView{ID: noContractID, Chain: readmodel.Ethereum, HasContract: false, Version: 1, Detail: detailJSON}
	r.floors[testID] = render.FloorView{Version: 5, Body: floorBody(testID, "1050000000000000000", false)}
	r.floors[noContractID] = render.FloorView{Version: 5, Body: floorBody(noContractID, "", false)}
	r.putListings(testID, listingsView(1, 30, nil))
	r.putListings(noContractID, render.ListingsView{Version: 1, StaleSources: nil})
	for i := 0; i < 12; i++ {
		r.sales[testID] = append(r.sales[testID], saleItem(testID, i))
	}
	for _, k := range []string{"volume|", "floor|", "recent|", "volume|ethereum"} {
		for i := 0; i < 7; i++ {
			r.browse[k] = append(r.browse[k], summaryItem(fmt.Sprintf("c%d", i), i))
		}
	}
}

// listingsView is version v with n ascending items "o<v>-<i>"; exp gives
// per-item expiry (nil: none).
func listingsView(v uint64, n int, exp func(i int) int64) render.ListingsView {
	lv := render.ListingsView{Version: v}
	for i := 0; i < n; i++ {
		lv.Items = append(lv.Items, withFees(evmItem(testID, testContract, i, strconv.Itoa(1000+i), float64(1000+i)/1e18, fmt.Sprintf("o%d-%d", v, i))))
		var e int64
		if exp != nil {
			e = exp(i)
		}
		lv.ExpiresAt = append(lv.ExpiresAt, e)
	}
	return lv
}

// ---- server harness ----

var t0 = time.Date(2026, 11, 22, 12, 0, 30, 0, time.UTC)

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Set(t time.Time)     { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }
func (c *testClock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

type harness struct {
	t     testing.TB
	srv   *Server
	r     *fakeReader
	clock *testClock
	reg   *prometheus.Registry
}

// MustHarness builds a Server over a seeded fakeReader with an injected
// clock. The app.Test peer (0.0.0.0) is a trusted proxy so tests choose the
// client with X-Forwarded-For.
func MustHarness(t testing.TB, mod func(*Config)) *harness {
	t.Helper()
	r := newFakeReader()
	seed(r)
	clock := &testClock{t: t0}
	reg := prometheus.NewRegistry()
	cfg := Config{
		RateList: 1000, RateItem: 1000,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32")},
		CursorKey:      []byte("test-key"),
		Now:            clock.Now,
		Registry:       reg,
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg, r, zerolog.Nop())
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return &harness{t: t, srv: srv, r: r, clock: clock, reg: reg}
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func (r result) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

// errorCode returns error.code of an error body.
func (r result) errorCode(t testing.TB) string {
	t.Helper()
	m := r.json(t)
	e, ok := m["error"].(map[string]any)
	require.True(t, ok, "no error object in %s", r.body)
	return e["code"].(string)
}

// do sends one request and validates the response against the embedded
// OpenAPI document whenever the request is one the document describes.
func (h *harness) do(method, target string, hdr ...string) result {
	h.t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := h.srv.App().Test(req, -1)
	require.NoError(h.t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	_ = resp.Body.Close()
	res := result{status: resp.StatusCode, header: resp.Header, body: body}
	if documented(method, req.URL.Path) {
		resp.Body = io.NopCloser(bytes.NewReader(body))
		vreq := httptest.NewRequest(method, target, nil)
		ok, verrs := openAPIValidator(h.t).ValidateHttpResponse(vreq, resp)
		if !ok {
			var msgs []string
			for _, e := range verrs {
				msgs = append(msgs, e.Message+": "+e.Reason)
				for _, se := range e.SchemaValidationErrors {
					msgs = append(msgs, "  "+se.Reason+" at "+se.FieldPath)
				}
			}
			h.t.Errorf("%s %s → %d violates openapi.json:\n%s\nbody: %s", method, target, resp.StatusCode, strings.Join(msgs, "\n"), body)
		}
	}
	return res
}

func (h *harness) get(target string, hdr ...string) result {
	h.t.Helper()
	return h.do(http.MethodGet, target, hdr...)
}

// documented reports whether the OpenAPI document describes method on path
// (GET and OPTIONS on every route).
func documented(method, path string) bool {
	if method != http.MethodGet && method != http.MethodOptions {
		return false
	}
	path = strings.TrimSuffix(path, "/")
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case path == "/v1", path == "/v1/openapi.json", path == "/v1/docs", path == docsScriptPath, path == "/v1/collections", path == "/v1/tokens", path == "/v1/status", path == "/v1/events":
		return true
	case len(segs) == 3 && segs[1] == "collections":
		return true
	case len(segs) == 4 && segs[1] == "collections" && (segs[3] == "floor" || segs[3] == "listings" || segs[3] == "sales" || segs[3] == "events" || segs[3] == "sweep"):
		return true
	case len(segs) == 5 && segs[1] == "tokens":
		return true
	}
	return false
}

var (
	validatorOnce sync.Once
	theValidator  validator.Validator
	validatorErr  error
)

// openAPIValidator returns the validator built once from OpenAPIDocument.
func openAPIValidator(t testing.TB) validator.Validator {
	t.Helper()
	validatorOnce.Do(func() {
		doc, err := libopenapi.NewDocument(OpenAPIDocument)
		if err != nil {
			validatorErr = err
			return
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			validatorErr = fmt.Errorf("%v", errs)
			return
		}
		theValidator = v
	})
	require.NoError(t, validatorErr)
	return theValidator
}

// data returns the "data" array of a list response.
func data(t testing.TB, r result) []any {
	t.Helper()
	d, ok := r.json(t)["data"].([]any)
	require.True(t, ok, "data is not an array: %s", r.body)
	return d
}

func pagination(t testing.TB, r result) (next string, hasMore bool) {
	t.Helper()
	p := r.json(t)["pagination"].(map[string]any)
	if s, ok := p["nextCursor"].(string); ok {
		next = s
	}
	return next, p["hasMore"].(bool)
}

// tokenView is an EVM token detail listed natively (no time slot) at version v.
func tokenView(v uint64) render.TokenView {
	item := string(withFees(evmItem(testID, testContract, 1, "1000", 1e-15, "ethereum_"+testContract+"_1_1700000000000")))
	return render.TokenView{Version: v, Body: render.TimedBody{Head: []byte(`{"chain":"ethereum","contractAddress":"` + testContract + `","tokenId":"1","mint":null,"collectionId":"` + testID + `","name":"#1","image":null,"rarity":{"rank":null},"owner":{"address":"0x00000000000000000000000000000000000000aa","kind":"wallet","label":null},"listing":` + item + `,"lastSale":null}`)}}
}

// overlayTokenView is a Solana token whose overlay listing timestamp is the
// time slot.
func overlayTokenView(v uint64) render.TokenView {
	return render.TokenView{Version: v, Body: render.TimedBody{
		Head:  []byte(`{"chain":"solana","contractAddress":null,"tokenId":null,"mint":"` + solAsset + `","collectionId":"solana_x","name":null,"image":null,"rarity":{"rank":4},"owner":{"address":"seller1","kind":"wallet","label":null},"listing":{"chain":"solana","contractAddress":null,"tokenId":null,"mint":"` + solAsset + `","collectionId":"solana_x","price":{"raw":"5","decimal":5e-9,"currency":"SOL","usd":null},"seller":"seller1","buyer":null,"marketplace":"tensor","status":"active","expiresAt":null,"timestamp":"`),
		Tail:  []byte(`","orderId":"abc","tx":null,"fees":[{"kind":"aggregator","bps":200,"amount":{"raw":"1","decimal":1e-9,"currency":"SOL","usd":null}},{"kind":"royalty","bps":null,"amount":null}],"buyerPrice":null},"lastSale":{"price":{"raw":"7","decimal":7e-9,"currency":"SOL","usd":null}}}`),
		Timed: true,
	}}
}
