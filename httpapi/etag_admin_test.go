package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// TestETag: an ETag from the view version; a matching If-None-Match is 304
// with the same ETag and cache headers; a new version is a new tag.
func TestETag(t *testing.T) {
	targets := map[string]string{
		"index":       "/v1",
		"openapi":     "/v1/openapi.json",
		"collections": "/v1/collections",
		"detail":      "/v1/collections/" + testID,
		"floor":       "/v1/collections/" + testID + "/floor",
		"listings":    "/v1/collections/" + testID + "/listings",
		"sales":       "/v1/collections/" + testID + "/sales",
		"token":       "/v1/tokens/ethereum/" + testContract + "/1",
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			h := MustHarness(t, nil)
			h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
			res := h.get(target)
			require.Equal(t, 200, res.status)
			tag := res.header.Get("ETag")
			require.True(t, strings.HasPrefix(tag, `W/"`), tag)
			assert.Equal(t, tag, h.get(target).header.Get("ETag"), "stable while the view is unchanged")

			for _, inm := range []string{tag, strings.TrimPrefix(tag, "W/"), `"nope", ` + tag, "*"} {
				nm := h.get(target, "If-None-Match", inm)
				require.Equal(t, http.StatusNotModified, nm.status, inm)
				assert.Empty(t, nm.body)
				assert.Equal(t, tag, nm.header.Get("ETag"))
				assert.Equal(t, res.header.Get("Cache-Control"), nm.header.Get("Cache-Control"))
				assert.Equal(t, res.header.Get("CDN-Cache-Control"), nm.header.Get("CDN-Cache-Control"))
				assertCORS(t, nm)
			}
			assert.Equal(t, 200, h.get(target, "If-None-Match", `W/"0000000000000000"`).status)
		})
	}
	t.Run("a new version is a new tag", func(t *testing.T) {
		h := MustHarness(t, nil)
		target := "/v1/collections/" + testID + "/listings"
		tag := h.get(target).header.Get("ETag")
		h.r.putListings(testID, listingsView(2, 30, nil))
		res := h.get(target, "If-None-Match", tag)
		assert.Equal(t, 200, res.status)
		assert.NotEqual(t, tag, res.header.Get("ETag"))
	})
	t.Run("an item expiring is a new tag", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.putListings(testID, listingsView(2, 3, func(i int) int64 { return t0.UnixMilli() + 1000 }))
		target := "/v1/collections/" + testID + "/listings"
		tag := h.get(target).header.Get("ETag")
		h.clock.Add(2 * time.Second)
		assert.Equal(t, 200, h.get(target, "If-None-Match", tag).status)
	})
	t.Run("the same slug re-pointed is a new tag", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.collections[otherID] = render.CollectionView{ID: otherID, Chain: readmodel.Base, HasContract: true, Version: 3, Detail: detailJSON}
		tag := h.get("/v1/collections/" + testSlug).header.Get("ETag")
		h.r.aliases[testSlug] = otherID
		assert.Equal(t, 200, h.get("/v1/collections/"+testSlug, "If-None-Match", tag).status)
	})
	t.Run("another node's tag for the same version never matches", func(t *testing.T) {
		a, b := MustHarness(t, nil), MustHarness(t, nil)
		target := "/v1/collections/" + testID + "/listings"
		tag := a.get(target).header.Get("ETag")
		assert.Equal(t, 200, b.get(target, "If-None-Match", tag).status, "view versions are node-local")
	})
	t.Run("no version, no tag", func(t *testing.T) {
		h := MustHarness(t, nil)
		cv := h.r.collections[testID]
		cv.Version = 0
		h.r.collections[testID] = cv
		res := h.get("/v1/collections/"+testID, "If-None-Match", "*")
		assert.Equal(t, 200, res.status)
		assert.Empty(t, res.header.Get("ETag"))
	})
}

func TestMetrics(t *testing.T) {
	h := MustHarness(t, func(c *Config) { c.RateItem = 1 })
	h.get("/v1/collections/" + testID)
	h.get("/v1/collections/" + testSlug)
	h.get("/v1/nothing")
	m := h.srv.metrics
	assert.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues("/v1/collections/:id", "200")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues("/v1/collections/:id", "429")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues("unmatched", "404")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.rateLimited.WithLabelValues("item")))
	n, err := testutil.GatherAndCount(h.reg, "marketd_http_request_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	families, err := h.reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		for _, mm := range f.GetMetric() {
			for _, l := range mm.GetLabel() {
				assert.NotContains(t, l.GetValue(), testID, "route label is the pattern, never the raw path")
			}
		}
	}
	_, err = New(Config{Registry: h.reg}, h.r, zerolog.Nop())
	assert.Error(t, err, "a second server on the same registry is refused")
}

type fakeAdmin struct {
	ready   bool
	ingest  error
	sources error
}

// fakeAdmin is a node that runs ingest but cannot run a full cycle and
// keeps no views; it does not say why it is not ready.
func (a *fakeAdmin) Readiness() (bool, string) { return a.ready, "" }
func (a *fakeAdmin) RunFullIngest(context.Context, bool) (any, error) {
	return nil, errors.New("this node cannot run a full ingest cycle")
}
func (a *fakeAdmin) PublishSnapshot(context.Context) (any, error) {
	return nil, errors.New("this node keeps no views")
}
func (a *fakeAdmin) RunIngest(context.Context) (any, error) {
	if a.ingest != nil {
		return nil, a.ingest
	}
	return map[string]int{"published": 3}, nil
}

// fullAdmin can also run a full cycle.
type fullAdmin struct{ fakeAdmin }

func (a *fullAdmin) RunFullIngest(_ context.Context, purge bool) (any, error) {
	return map[string]any{"full": true, "purged": purge}, nil
}

// serveAdmin answers one request of the admin listener over a.
func serveAdmin(a Admin, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	NewAdmin(a, nil, zerolog.Nop()).Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestAdminFullIngest(t *testing.T) {
	tests := []struct {
		name   string
		admin  Admin
		path   string
		status int
		body   string
	}{
		{"full", &fullAdmin{}, "/admin/ingest?full=true", 200, `{"full":true,"purged":false}`},
		{"full after a purge", &fullAdmin{}, "/admin/ingest?full=true&purge=true", 200, `{"full":true,"purged":true}`},
		{"not full", &fullAdmin{}, "/admin/ingest?full=false", 200, `{"published":3}`},
		{"purge needs full", &fullAdmin{}, "/admin/ingest?purge=true", 400, `"bad_request"`},
		{"a bad flag", &fullAdmin{}, "/admin/ingest?full=yes", 400, `"bad_request"`},
		{"an admin without full cycles", &fakeAdmin{}, "/admin/ingest?full=true", 503, `cannot run a full ingest cycle`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := serveAdmin(tc.admin, "POST", tc.path)
			assert.Equal(t, tc.status, rec.Code)
			assert.Contains(t, rec.Body.String(), tc.body)
		})
	}
}

// snapAdmin can also publish a views snapshot.
type snapAdmin struct {
	fakeAdmin
	err error
}

func (a *snapAdmin) PublishSnapshot(context.Context) (any, error) {
	if a.err != nil {
		return nil, a.err
	}
	return map[string]any{"state": 42, "bytes": 1000}, nil
}

func TestAdminSnapshot(t *testing.T) {
	tests := []struct {
		name   string
		admin  Admin
		method string
		status int
		body   string
	}{
		{"published", &snapAdmin{}, "POST", 200, `{"bytes":1000,"state":42}`},
		{"the bus failing", &snapAdmin{err: errors.New("put views snapshot: no responders")}, "POST", 503, `no responders`},
		{"past its deadline", &snapAdmin{err: fmt.Errorf("publish: %w", context.DeadlineExceeded)}, "POST", 504, `"timeout"`},
		{"an admin without views", &fakeAdmin{}, "POST", 503, `keeps no views`},
		{"needs POST", &snapAdmin{}, "GET", 405, ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := serveAdmin(tc.admin, tc.method, "/admin/snapshot")
			assert.Equal(t, tc.status, rec.Code)
			assert.Contains(t, rec.Body.String(), tc.body)
		})
	}
}

func (a *fakeAdmin) Sources(context.Context) (any, error) {
	if a.sources != nil {
		return nil, a.sources
	}
	return []map[string]string{{"source": "order-book", "errorClass": ""}}, nil
}

func TestAdmin(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := MustHarness(t, func(c *Config) { c.Registry = reg })
	h.get("/v1")
	tests := []struct {
		name, method, path string
		admin              fakeAdmin
		status             int
		body               string
	}{
		{"healthz", "GET", "/healthz", fakeAdmin{}, 200, `{"ok":true}`},
		{"ready", "GET", "/readyz", fakeAdmin{ready: true}, 200, `{"ready":true}`},
		{"not ready", "GET", "/readyz", fakeAdmin{}, 503, `{"ready":false}`},
		{"ingest", "POST", "/admin/ingest", fakeAdmin{}, 200, `{"published":3}`},
		{"ingest unavailable", "POST", "/admin/ingest", fakeAdmin{ingest: errors.New("role has no ingest")}, 503, `"role has no ingest"`},
		{"ingest past its deadline", "POST", "/admin/ingest", fakeAdmin{ingest: fmt.Errorf("wait for projection: %w", context.DeadlineExceeded)}, 504, `"timeout"`},
		{"ingest needs POST", "GET", "/admin/ingest", fakeAdmin{}, 405, ``},
		{"sources", "GET", "/admin/sources", fakeAdmin{}, 200, `"order-book"`},
		{"sources failing", "GET", "/admin/sources", fakeAdmin{sources: errors.New("x")}, 503, `"error"`},
		{"metrics", "GET", "/metrics", fakeAdmin{}, 200, `marketd_http_requests_total{route="/v1",status="200"} 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.admin
			srv := NewAdmin(&a, reg, zerolog.Nop())
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			assert.Equal(t, tc.status, rec.Code)
			b, _ := io.ReadAll(rec.Body)
			assert.Contains(t, string(b), tc.body)
		})
	}
}

// reasonedAdmin is an Admin that says why it is not ready.
type reasonedAdmin struct {
	fakeAdmin
	reason string
}

func (a *reasonedAdmin) Readiness() (bool, string) { return a.reason == "", a.reason }

func TestReadyzSaysWhy(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		status int
		body   string
	}{
		{"ready", "", 200, `{"ready":true}`},
		{"bus unreachable", "bus unreachable: nats: no servers available", 503, `{"ready":false,"reason":"bus unreachable: nats: no servers available"}`},
		{"behind", "behind the streams by more than one cycle", 503, `"reason":"behind the streams by more than one cycle"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewAdmin(&reasonedAdmin{reason: tc.reason}, nil, zerolog.Nop())
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			assert.Equal(t, tc.status, rec.Code)
			assert.Contains(t, rec.Body.String(), tc.body)
			assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))

			// marketd_ready says the same, for alerting.
			rec = httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			want := "marketd_ready 0\n"
			if tc.reason == "" {
				want = "marketd_ready 1\n"
			}
			assert.Contains(t, rec.Body.String(), want)
		})
	}
}

func TestAdminListen(t *testing.T) {
	srv := NewAdmin(&fakeAdmin{ready: true}, nil, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Listen(ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/readyz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	require.NoError(t, srv.Shutdown(context.Background()))
	assert.NoError(t, <-done)
}
