package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// client is the harness's HTTP client for set-up requests (not load).
var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

// get fetches url and returns status, headers and body.
func get(ctx context.Context, u string) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// post sends an empty POST with its own timeout and returns status and body.
func post(ctx context.Context, u string, timeout time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return 0, nil, err
	}
	c := &http.Client{} // no client timeout: ctx bounds it
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// waitReady polls GET admin/readyz until 200, the process exits, or
// timeout; it returns how long that took.
func waitReady(ctx context.Context, adminBase string, p *Proc, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	err := waitHTTP(ctx, adminBase+"/readyz", p, timeout)
	return time.Since(start), err
}

// waitHTTP polls GET u until it answers 200, p exits, or timeout.
func waitHTTP(ctx context.Context, u string, p *Proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		st, _, _, err := get(ctx, u)
		if err == nil && st == http.StatusOK {
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("%s exited before it was ready", p.Name)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Endpoint is one measured public route with a concrete path.
type Endpoint struct {
	Name string // short label in the report
	Path string // path and query, e.g. /v1/collections/x/listings?limit=25
}

// collectionItem is what the harness reads of a browse page item.
type collectionItem struct {
	ID              string  `json:"id"`
	Chain           *string `json:"chain"`
	ContractAddress *string `json:"contractAddress"`
}

// marketItem is what the harness reads of a listing row.
type marketItem struct {
	Chain           string  `json:"chain"`
	ContractAddress *string `json:"contractAddress"`
	TokenID         *string `json:"tokenId"`
	Mint            *string `json:"mint"`
}

type listPage[T any] struct {
	Data []T `json:"data"`
}

// Picked is the collection and token the read path is measured on.
type Picked struct {
	Collection collectionItem
	Listings   int // items on its listings page at limit=100
	Sales      int // items on its sales page at limit=25
	TokenPath  string
	Candidates []string // ids of the browse page, for the freshness poll set
	// TokenIDs are up to 50 chain/address/tokenId of its listed tokens
	// (the batch tokens request).
	TokenIDs []string
	// EventsFull and EventsHead are paths of its change feed: a full page
	// (immutable; "" when the feed holds fewer than 25 events) and the
	// head page (the one a poller that kept up reads).
	EventsFull, EventsHead string
	// MarketFull and MarketHead are the same of the market's change feed
	// (GET /v1/events); MarketHead is "" when the walk to it is longer
	// than marketPages pages.
	MarketFull, MarketHead string
}

// pickIDs chooses, among the first browse page, the collection with the
// fullest listings page (ties: more sales), and a listed token of it.
func pickIDs(ctx context.Context, api string, maxCandidates int) (Picked, error) {
	var p Picked
	st, _, body, err := get(ctx, api+"/v1/collections?limit=100")
	if err != nil || st != http.StatusOK {
		return p, fmt.Errorf("browse page: status %d: %v", st, err)
	}
	var page listPage[collectionItem]
	if err := json.Unmarshal(body, &page); err != nil {
		return p, fmt.Errorf("browse page: %w", err)
	}
	if len(page.Data) == 0 {
		return p, fmt.Errorf("browse page is empty")
	}
	for _, c := range page.Data {
		p.Candidates = append(p.Candidates, c.ID)
	}
	type cand struct {
		c               collectionItem
		listings, sales int
		first           *marketItem
		rows            []marketItem
	}
	var best *cand
	for i, c := range page.Data {
		if i >= maxCandidates {
			break
		}
		esc := url.PathEscape(c.ID)
		st, _, lb, err := get(ctx, api+"/v1/collections/"+esc+"/listings?limit=100")
		if err != nil || st != http.StatusOK {
			continue
		}
		var lp listPage[marketItem]
		if json.Unmarshal(lb, &lp) != nil || len(lp.Data) == 0 {
			continue
		}
		cd := &cand{c: c, listings: len(lp.Data), first: &lp.Data[0], rows: lp.Data}
		if st, _, sb, err := get(ctx, api+"/v1/collections/"+esc+"/sales"); err == nil && st == http.StatusOK {
			var sp listPage[json.RawMessage]
			if json.Unmarshal(sb, &sp) == nil {
				cd.sales = len(sp.Data)
			}
		}
		if best == nil || cd.listings > best.listings || (cd.listings == best.listings && cd.sales > best.sales) {
			best = cd
		}
		if best.listings == 100 && best.sales >= 25 {
			break
		}
	}
	if best == nil {
		return p, fmt.Errorf("none of the first %d collections has a listing", maxCandidates)
	}
	p.Collection, p.Listings, p.Sales = best.c, best.listings, best.sales
	tp, err := tokenPath(best.c, *best.first)
	if err != nil {
		return p, err
	}
	p.TokenPath = tp
	for _, it := range best.rows {
		if len(p.TokenIDs) == 50 {
			break
		}
		if tp, err := tokenPath(best.c, it); err == nil {
			p.TokenIDs = append(p.TokenIDs, strings.TrimPrefix(tp, "/v1/tokens/"))
		}
	}
	p.EventsFull, p.EventsHead = feedPaths(ctx, api, best.c.ID)
	p.MarketFull, p.MarketHead = marketFeedPaths(ctx, api)
	return p, nil
}

// feedPaths walks collection id's change feed in pages of 25 and returns
// the path of its second page when that is full (the first full page after
// a cursor: immutable; "" when there is none) and the path of its head
// page (the first that is not full); both "" when the node serves no feed.
func feedPaths(ctx context.Context, api, id string) (full, head string) {
	return walkFeed(ctx, api, "/v1/collections/"+url.PathEscape(id)+"/events?limit=25", 10000)
}

// marketPages bounds the walk to the market feed's head: 2,000,000 events
// at 100 a page.
const marketPages = 20000

// marketFeedPaths is feedPaths of the market's change feed: its full page
// is the second of 25 events, its head page is found in pages of 100 (a
// large market's first cycle alone is some million events).
func marketFeedPaths(ctx context.Context, api string) (full, head string) {
	full, _ = walkFeed(ctx, api, "/v1/events?limit=25", 2)
	_, head = walkFeed(ctx, api, "/v1/events?limit=100", marketPages)
	return full, head
}

// walkFeed walks the feed at base (a path with its limit) for at most
// pages pages and returns the path of its second page when that is full
// and the path of its head page, as feedPaths says.
func walkFeed(ctx context.Context, api, base string, pages int) (full, head string) {
	path := base
	for i := 0; i < pages; i++ {
		st, _, body, err := get(ctx, api+path)
		if err != nil || st != http.StatusOK {
			return "", ""
		}
		var page struct {
			Pagination struct {
				NextCursor *string `json:"nextCursor"`
				HasMore    bool    `json:"hasMore"`
			} `json:"pagination"`
		}
		if json.Unmarshal(body, &page) != nil {
			return "", ""
		}
		if !page.Pagination.HasMore || page.Pagination.NextCursor == nil {
			return full, path
		}
		if i == 1 {
			full = path
		}
		path = base + "&cursor=" + url.QueryEscape(*page.Pagination.NextCursor)
	}
	return full, ""
}

// tokenPath is the token URL of a listing row: EVM uses the row's contract
// and token id; Solana the collection mint and the asset mint.
func tokenPath(c collectionItem, it marketItem) (string, error) {
	switch {
	case it.Chain == "solana":
		if c.ContractAddress == nil || it.Mint == nil {
			return "", fmt.Errorf("solana listing of %s lacks a collection mint or asset mint", c.ID)
		}
		return "/v1/tokens/solana/" + url.PathEscape(*c.ContractAddress) + "/" + url.PathEscape(*it.Mint), nil
	case it.ContractAddress != nil && it.TokenID != nil:
		return "/v1/tokens/" + it.Chain + "/" + *it.ContractAddress + "/" + url.PathEscape(*it.TokenID), nil
	default:
		return "", fmt.Errorf("listing of %s lacks contractAddress/tokenId", c.ID)
	}
}

// endpoints are the measured routes for a picked collection and token.
func endpoints(p Picked) []Endpoint {
	c := "/v1/collections/" + url.PathEscape(p.Collection.ID)
	eps := []Endpoint{
		{"collections page", "/v1/collections"},
		{"collection detail", c},
		{"floor", c + "/floor"},
		{"listings limit=25", c + "/listings?limit=25"},
		{"listings limit=100", c + "/listings?limit=100"},
		{"sales page", c + "/sales"},
		{"token", p.TokenPath},
		{"sweep count=50", c + "/sweep?count=50"},
		{"floor history (a week of hours)", c + "/floor/history?interval=1h"},
	}
	if p.EventsFull != "" {
		eps = append(eps, Endpoint{"events page (full)", p.EventsFull})
	}
	if p.EventsHead != "" {
		eps = append(eps, Endpoint{"events page (head)", p.EventsHead})
	}
	if p.MarketFull != "" {
		eps = append(eps, Endpoint{"market events page (full)", p.MarketFull})
	}
	if p.MarketHead != "" {
		eps = append(eps, Endpoint{"market events page (head)", p.MarketHead})
	}
	if len(p.TokenIDs) > 0 {
		eps = append(eps, Endpoint{fmt.Sprintf("tokens batch (%d ids)", len(p.TokenIDs)), "/v1/tokens?ids=" + strings.Join(p.TokenIDs, ",")})
	}
	return eps
}

// Capture is one marketd response saved for benchref.
type Capture struct {
	Status     int
	BodyBytes  int
	BodyFile   string
	HeaderFile string
	Headers    http.Header
}

// capture fetches api+path and writes its body and a curl -D style header
// dump under dir, named after slug.
func capture(ctx context.Context, api, path, dir, slug string) (Capture, error) {
	st, h, body, err := get(ctx, api+path)
	if err != nil {
		return Capture{}, err
	}
	c := Capture{Status: st, BodyBytes: len(body), Headers: h,
		BodyFile: filepath.Join(dir, slug+".body"), HeaderFile: filepath.Join(dir, slug+".headers")}
	if err := os.WriteFile(c.BodyFile, body, 0o644); err != nil {
		return c, err
	}
	if err := os.WriteFile(c.HeaderFile, headerDump(st, h), 0o644); err != nil {
		return c, err
	}
	if st != http.StatusOK {
		return c, fmt.Errorf("GET %s: status %d: %.200s", path, st, body)
	}
	return c, nil
}

// headerDump renders status and headers as `curl -D` does, sorted by name.
func headerDump(status int, h http.Header) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range h[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// slugify makes a file-name-safe label.
func slugify(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(s))
}
