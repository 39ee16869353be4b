package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// FreshSample is one tick → ingest → served measurement. Times are relative
// to the moment the harness sent POST /admin/ingest (just after the tick).
type FreshSample struct {
	Observed   bool          // a changed body was seen
	Served     time.Duration // first changed body seen
	LastServed time.Duration // the last watched path to change showed its change
	Changed    int           // watched paths that changed
	Watched    int           // paths watched
	Returned   time.Duration // POST /admin/ingest answered (projected)
	Published  time.Duration // the cycle's end of publishing, from its summary
	HasPublish bool
	URL        string // the path whose body changed first
	LastURL    string // the path whose body changed last
}

// AfterPublish is how long after the cycle finished publishing the last
// observed change was served (or the time from POST start when the summary
// gives no publish time: an upper bound). Negative: served while the cycle
// was still publishing.
func (s FreshSample) AfterPublish() time.Duration {
	if s.HasPublish {
		return s.LastServed - s.Published
	}
	return s.LastServed
}

// pollSet is the paths watched for a change: browse pages in every sort and
// the listings, detail and sales pages of the first collections.
func pollSet(ids []string, n int) []string {
	set := []string{"/v1/collections?limit=100&sort=volume", "/v1/collections?limit=100&sort=floor", "/v1/collections?limit=100&sort=recent"}
	for i, id := range ids {
		if i >= n {
			break
		}
		c := "/v1/collections/" + id
		set = append(set, c+"/listings?limit=100", c, c+"/sales?limit=100")
	}
	return set
}

// stableBaseline fetches every path twice and keeps those whose body did
// not change between the two reads (bodies that embed the request time,
// such as the floor's updatedAt, would otherwise look changed every time).
func stableBaseline(ctx context.Context, api string, paths []string) map[string][]byte {
	first := map[string][]byte{}
	for _, p := range paths {
		if st, _, b, err := get(ctx, api+p); err == nil && st == http.StatusOK {
			first[p] = withoutCursor(b)
		}
	}
	out := map[string][]byte{}
	for p, b := range first {
		if st, _, b2, err := get(ctx, api+p); err == nil && st == http.StatusOK && bytes.Equal(b, withoutCursor(b2)) {
			out[p] = b
		}
	}
	return out
}

// cursorValue matches a page's next cursor. A cursor carries its expiry,
// rounded to the minute, so a page's body changes at every minute boundary
// although nothing upstream did: the freshness watch compares bodies
// without it (a change of the data still changes the items, or hasMore).
var cursorValue = regexp.MustCompile(`"nextCursor":"[^"]*"`)

// withoutCursor returns body with its next cursor's value blanked.
func withoutCursor(body []byte) []byte {
	return cursorValue.ReplaceAll(body, []byte(`"nextCursor":""`))
}

// onlyExpired reports whether a listings page's change from was to now is
// the clock's, not an upstream change: the items of was that have not
// expired by at (expiresAt after it) lead now in the same order, and
// whatever follows them moved up from later pages; meta is unchanged.
// Listings expire at
// request time, so such a change can come at any moment of the watch.
func onlyExpired(was, now []byte, at time.Time) bool {
	type item struct {
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	type page struct {
		Data []json.RawMessage `json:"data"`
		Meta json.RawMessage   `json:"meta"`
	}
	var a, b page
	if json.Unmarshal(was, &a) != nil || json.Unmarshal(now, &b) != nil || !bytes.Equal(a.Meta, b.Meta) {
		return false
	}
	kept := a.Data[:0:0]
	for _, raw := range a.Data {
		var it item
		if json.Unmarshal(raw, &it) != nil {
			return false
		}
		if it.ExpiresAt == nil || it.ExpiresAt.After(at) {
			kept = append(kept, raw)
		}
	}
	if len(kept) == len(a.Data) || len(b.Data) < len(kept) {
		return false // nothing expired, or items vanished that had not
	}
	for i := range kept {
		if !bytes.Equal(kept[i], b.Data[i]) {
			return false
		}
	}
	return true
}

// freshOnce ticks the simulator, runs one ingest cycle through the admin
// API, and polls the baseline paths until one serves a changed body.
// It waits at most grace after the ingest answer for the change.
func freshOnce(ctx context.Context, api, admin, sim string, base map[string][]byte, workers int, cycleTimeout, grace time.Duration) (FreshSample, []byte, error) {
	var s FreshSample
	if st, b, err := post(ctx, sim+"/_sim/tick", 10*time.Second); err != nil || st/100 != 2 {
		return s, nil, fmt.Errorf("sim tick: status %d %v %.200s", st, err, b)
	}
	paths := make([]string, 0, len(base))
	for p := range base {
		paths = append(paths, p)
	}
	type ingestResult struct {
		at   time.Time
		st   int
		body []byte
		err  error
	}
	start := time.Now()
	ingested := make(chan ingestResult, 1)
	go func() {
		st, b, err := post(ctx, admin+"/admin/ingest", cycleTimeout)
		ingested <- ingestResult{time.Now(), st, b, err}
	}()

	pctx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	var (
		mu        sync.Mutex
		changedAt = map[string]time.Time{}
		clocked   = map[string][]byte{} // paths whose listings expired meanwhile: their new baseline
		wg        sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for pctx.Err() == nil {
				pending := 0
				for i := w; i < len(paths); i += workers {
					mu.Lock()
					_, done := changedAt[paths[i]]
					mu.Unlock()
					if done {
						continue
					}
					pending++
					mu.Lock()
					was, ok := clocked[paths[i]]
					mu.Unlock()
					if !ok {
						was = base[paths[i]]
					}
					st, _, b, err := get(pctx, api+paths[i])
					if err != nil || st != http.StatusOK {
						continue
					}
					b = withoutCursor(b)
					if bytes.Equal(b, was) {
						continue
					}
					at := time.Now()
					mu.Lock()
					if onlyExpired(was, b, at) {
						clocked[paths[i]] = b
						mu.Unlock()
						continue
					}
					changedAt[paths[i]] = at
					all := len(changedAt) == len(paths)
					mu.Unlock()
					if all {
						stopPoll()
					}
				}
				if pending == 0 {
					return
				}
				select {
				case <-pctx.Done():
				case <-time.After(5 * time.Millisecond):
				}
			}
		}(w)
	}
	var res ingestResult
	select {
	case res = <-ingested:
	case <-ctx.Done():
		stopPoll()
		wg.Wait()
		return s, nil, ctx.Err()
	}
	if res.err != nil || res.st != http.StatusOK {
		stopPoll()
		wg.Wait()
		return s, res.body, fmt.Errorf("admin ingest: status %d %v %.300s", res.st, res.err, res.body)
	}
	s.Returned = res.at.Sub(start)
	// Changes may reach the API after the ingest answer (a read cache): keep
	// watching for grace.
	select {
	case <-pctx.Done():
	case <-time.After(grace):
		stopPoll()
	}
	wg.Wait()
	s.Watched, s.Changed = len(paths), len(changedAt)
	for p, at := range changedAt {
		d := at.Sub(start)
		if !s.Observed || d < s.Served {
			s.Served, s.URL = d, p
		}
		if d > s.LastServed {
			s.LastServed, s.LastURL = d, p
		}
		s.Observed = true
	}
	if t, ok := summaryPublishTime(res.body); ok {
		s.Published, s.HasPublish = t.Sub(start), true
	}
	return s, res.body, nil
}

// publishKeys are summary fields, tried in order, that may hold the time a
// cycle finished publishing (ingest.Summary has "end": set after the
// publisher's flush).
var publishKeys = []string{"publishedAt", "published", "publishEnd", "end", "finishedAt", "finished", "endedAt", "ended", "doneAt", "done"}

// summaryPublishTime finds the cycle's publish time in an ingest summary:
// the first of publishKeys (case-insensitive, top level) holding an RFC 3339
// time.
func summaryPublishTime(body []byte) (time.Time, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return time.Time{}, false
	}
	lower := map[string]json.RawMessage{}
	for k, v := range m {
		lower[strings.ToLower(k)] = v
	}
	for _, k := range publishKeys {
		raw, ok := lower[strings.ToLower(k)]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil && !t.IsZero() {
			return t, true
		}
	}
	return time.Time{}, false
}

// percentile returns the p-th percentile (0..100) of ds by nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(s) {
		rank = len(s) - 1
	}
	return s[rank]
}
