package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	gojson "github.com/goccy/go-json"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// Default page sizes (rows per page) when the client sends no limit.
const (
	defaultLimit = 5000
	maxLimit     = 100000
)

// Handler serves every upstream contract under /<source-name>/ and the
// /_sim control API on one mux.
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	up := func(src readmodel.Source, path string, h func(http.ResponseWriter, *http.Request) error) {
		mux.HandleFunc("GET /"+string(src)+path, s.guard(src, h))
	}
	up(readmodel.SourceCollectionIndex, "/collections", s.serveCollections)
	up(readmodel.SourcePriceFeed, "/rates", s.serveRates)
	up(readmodel.SourceOrderBook, "/listings", func(w http.ResponseWriter, r *http.Request) error { return s.serveListings(w, r, false) })
	up(readmodel.SourceIndexerMirror, "/listings", func(w http.ResponseWriter, r *http.Request) error { return s.serveListings(w, r, true) })
	up(readmodel.SourceIndexerMirror, "/tokens", s.serveTokens)
	up(readmodel.SourceIndexerStats, "/stats", s.serveStats)
	up(readmodel.SourceAnalytics, "/analytics", s.serveAnalytics)
	up(readmodel.SourceSales, "/sales", s.serveSales)

	mux.HandleFunc("GET /_sim/faults", func(w http.ResponseWriter, r *http.Request) { s.writeFaults(w) })
	mux.HandleFunc("POST /_sim/faults", s.postFault)
	mux.HandleFunc("POST /_sim/faults/reset", func(w http.ResponseWriter, r *http.Request) {
		for _, src := range readmodel.Sources {
			s.SetFault(src, ModeOK)
		}
		s.writeFaults(w)
	})
	mux.HandleFunc("POST /_sim/tick", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"tick": s.Tick(), "now": fmtTime(s.Now())})
	})
	return mux
}

var errBadRequest = errors.New("bad request")

type badRequest string

func (b badRequest) Error() string { return string(b) }
func (b badRequest) Unwrap() error { return errBadRequest }

// guard applies src's fault mode, then runs h; an error from h is a 400.
func (s *Sim) guard(src readmodel.Source, h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch s.fault(src) {
		case ModeError:
			writeError(w, http.StatusInternalServerError, "internal", "injected fault")
			return
		case ModeTimeout:
			select {
			case <-r.Context().Done():
			case <-s.closing:
			}
			return
		}
		if err := h(w, r); err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		}
	}
}

// writeJSON writes v with goccy/go-json, which writes exactly
// encoding/json's bytes for every answer type (TestWriteJSONMatchesStd)
// in about a third of the time: encoding the answers was a third of the
// simulator's CPU at 100,000 collections. It encodes into a reused
// buffer: writeJSON allocated a fifteenth of all the bytes of a
// 100,000-collection node's first cycle, Marshal's copy of every answer
// among them.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := answerBufs.Get().(*bytes.Buffer)
	defer answerBufs.Put(buf)
	buf.Reset()
	var b []byte
	if err := gojson.NewEncoder(buf).Encode(v); err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"encode"}}`)
	} else {
		b = buf.Bytes()[:buf.Len()-1] // Encode ends with a newline, Marshal does not
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// answerBufs holds writeJSON's buffers; Write has copied or sent the
// bytes when it returns.
var answerBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func (s *Sim) writeFaults(w http.ResponseWriter) {
	s.mu.Lock()
	f := make(map[string]Mode, len(s.faults))
	for k, v := range s.faults {
		f[string(k)] = v
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"faults": f, "tick": s.Ticks()})
}

func (s *Sim) postFault(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Source string `json:"source"`
		Mode   string `json:"mode"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "body must be {\"source\": NAME, \"mode\": \"ok\"|\"error\"|\"timeout\"}")
		return
	}
	src, ok := readmodel.ParseSource(in.Source)
	if !ok {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("unknown source %q", clip(in.Source)))
		return
	}
	switch m := Mode(in.Mode); m {
	case ModeOK, ModeError, ModeTimeout:
		s.SetFault(src, m)
	default:
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("unknown mode %q", clip(in.Mode)))
		return
	}
	s.writeFaults(w)
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

// pageArgs parses cursor "<tick>.<index>" and limit. Without a cursor the
// walk starts at the current tick.
func (s *Sim) pageArgs(r *http.Request, def int) (tick int64, start, limit int, err error) {
	q := r.URL.Query()
	if limit, err = parseLimit(r, def); err != nil {
		return 0, 0, 0, err
	}
	tick = int64(s.Ticks())
	c := q.Get("cursor")
	if c == "" {
		return tick, 0, limit, nil
	}
	a, b, ok := strings.Cut(c, ".")
	t, err1 := strconv.ParseInt(a, 10, 64)
	i, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || t < 0 || t > tick || i < 0 || i > s.opts.Collections {
		return 0, 0, 0, badRequest("malformed cursor")
	}
	return t, i, limit, nil
}

func parseLimit(r *http.Request, def int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, badRequest(fmt.Sprintf("limit must be 1..%d", maxLimit))
	}
	return n, nil
}

func next(t int64, c, n int) string {
	if c >= n {
		return ""
	}
	return strconv.FormatInt(t, 10) + "." + strconv.Itoa(c)
}

func (s *Sim) serveCollections(w http.ResponseWriter, r *http.Request) error {
	t, c, limit, err := s.pageArgs(r, 2000)
	if err != nil {
		return err
	}
	var p source.Page[normalize.RawCollection]
	for ; c < s.opts.Collections && len(p.Items) < limit; c++ {
		k := s.m.coll(c)
		p.Items = append(p.Items, s.m.document(&k))
	}
	p.NextCursor = next(t, c, s.opts.Collections)
	writeJSON(w, http.StatusOK, &p)
	return nil
}

func (s *Sim) serveRates(w http.ResponseWriter, r *http.Request) error {
	t := int64(s.Ticks())
	writeJSON(w, http.StatusOK, map[string]any{"rates": s.m.rates(t), "asOf": fmtTime(s.m.timeOf(t))})
	return nil
}

func (s *Sim) serveListings(w http.ResponseWriter, r *http.Request, mirror bool) error {
	t, c, limit, err := s.pageArgs(r, defaultLimit)
	if err != nil {
		return err
	}
	var p source.Page[source.Group[normalize.RawListing]]
	for rows := 0; c < s.opts.Collections && rows < limit; c++ {
		k := s.m.coll(c)
		var rs []normalize.RawListing
		if mirror {
			rs = s.m.mirrorRows(&k, t)
		} else {
			rs = s.m.orderBookRows(&k, t)
		}
		if len(rs) == 0 {
			continue
		}
		p.Items = append(p.Items, source.Group[normalize.RawListing]{CollectionID: k.id, Rows: rs})
		rows += len(rs)
	}
	p.NextCursor = next(t, c, s.opts.Collections)
	writeJSON(w, http.StatusOK, &p)
	return nil
}

func (s *Sim) serveTokens(w http.ResponseWriter, r *http.Request) error {
	t, c, limit, err := s.pageArgs(r, defaultLimit)
	if err != nil {
		return err
	}
	since := int64(-1)
	if v := r.URL.Query().Get("since"); v != "" {
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n < 0 {
			return badRequest("since must be a watermark from a previous answer")
		}
		if n <= t {
			since = n
		}
	}
	p := source.Page[source.Group[normalize.RawToken]]{Watermark: strconv.FormatInt(t, 10)}
	for rows := 0; c < s.opts.Collections && rows < limit; c++ {
		k := s.m.coll(c)
		if k.tokens == 0 || (since >= 0 && !k.changedSince(since, t)) {
			continue
		}
		g := source.Group[normalize.RawToken]{CollectionID: k.id, Rows: make([]normalize.RawToken, k.tokens)}
		for i := range g.Rows {
			g.Rows[i] = s.m.token(&k, i, t)
		}
		p.Items = append(p.Items, g)
		rows += k.tokens
	}
	p.NextCursor = next(t, c, s.opts.Collections)
	writeJSON(w, http.StatusOK, &p)
	return nil
}

func (s *Sim) serveStats(w http.ResponseWriter, r *http.Request) error {
	t, c, limit, err := s.pageArgs(r, defaultLimit)
	if err != nil {
		return err
	}
	var p source.Page[normalize.RawStats]
	for ; c < s.opts.Collections && len(p.Items) < limit; c++ {
		k := s.m.coll(c)
		p.Items = append(p.Items, s.m.stats(&k, t))
	}
	p.NextCursor = next(t, c, s.opts.Collections)
	writeJSON(w, http.StatusOK, &p)
	return nil
}

func (s *Sim) serveAnalytics(w http.ResponseWriter, r *http.Request) error {
	t, c, limit, err := s.pageArgs(r, defaultLimit)
	if err != nil {
		return err
	}
	var p source.Page[normalize.RawAnalytics]
	for ; c < s.opts.Collections && len(p.Items) < limit; c++ {
		k := s.m.coll(c)
		p.Items = append(p.Items, s.m.analytics(&k, t))
	}
	p.NextCursor = next(t, c, s.opts.Collections)
	writeJSON(w, http.StatusOK, &p)
	return nil
}

// salesPos is a position in the sales feed: the history phase (collection,
// sale index) then the live phase (tick, collection, token).
type salesPos struct {
	live    bool
	tick    int64
	c, j, i int
}

func (p salesPos) String() string {
	if !p.live {
		return fmt.Sprintf("h.%d.%d", p.c, p.j)
	}
	return fmt.Sprintf("l.%d.%d.%d", p.tick, p.c, p.i)
}

func parseSalesPos(s string, n int, cur int64) (salesPos, error) {
	bad := badRequest("malformed sales cursor")
	parts := strings.Split(s, ".")
	nums := make([]int64, 0, 3)
	for _, x := range parts[1:] {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil || v < 0 {
			return salesPos{}, bad
		}
		nums = append(nums, v)
	}
	switch {
	case parts[0] == "h" && len(nums) == 2 && nums[0] <= int64(n):
		return salesPos{c: int(nums[0]), j: int(nums[1])}, nil
	case parts[0] == "l" && len(nums) == 3 && nums[0] >= 1 && nums[0] <= cur+1 && nums[1] <= int64(n):
		return salesPos{live: true, tick: nums[0], c: int(nums[1]), i: int(nums[2])}, nil
	}
	return salesPos{}, bad
}

func (s *Sim) serveSales(w http.ResponseWriter, r *http.Request) error {
	limit, err := parseLimit(r, defaultLimit)
	if err != nil {
		return err
	}
	cur := int64(s.Ticks())
	n := s.opts.Collections
	var pos salesPos
	if c := r.URL.Query().Get("cursor"); c != "" {
		if pos, err = parseSalesPos(c, n, cur); err != nil {
			return err
		}
	}
	var p source.Page[normalize.RawSale]
	k, kIdx := coll{}, -1
	load := func(c int) *coll {
		if kIdx != c {
			k, kIdx = s.m.coll(c), c
		}
		return &k
	}
	done := false
	for steps := 0; len(p.Items) < limit && !done; steps++ {
		if !pos.live {
			if pos.c >= n {
				pos = salesPos{live: true, tick: 1}
				continue
			}
			kc := load(pos.c)
			total := s.m.historySales(kc)
			if pos.j >= total {
				pos.c, pos.j = pos.c+1, 0
				continue
			}
			p.Items = append(p.Items, s.m.historySale(kc, pos.j, total))
			pos.j++
			continue
		}
		if pos.tick > cur {
			done = true
			break
		}
		if pos.c >= n {
			pos.tick, pos.c, pos.i = pos.tick+1, 0, 0
			continue
		}
		kc := load(pos.c)
		e := kc.epoch(pos.tick)
		if kc.tokens == 0 || e == kc.epoch(pos.tick-1) || pos.i >= kc.tokens {
			pos.c, pos.i = pos.c+1, 0
			continue
		}
		if sale, ok := s.m.sale(kc, pos.i, e); ok {
			p.Items = append(p.Items, sale)
		}
		pos.i++
	}
	p.HasMore = !done
	p.NextCursor = pos.String()
	writeJSON(w, http.StatusOK, &p)
	return nil
}
