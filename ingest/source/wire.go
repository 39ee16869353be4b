package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	gojson "github.com/goccy/go-json"

	"github.com/marketd/marketd/readmodel/normalize"
)

// MaxBody is the default bound of one upstream answer (Client.WithMaxBody
// changes it). A larger body fails the poll.
const MaxBody = 64 << 20

// MaxRow bounds one encoded row. A larger row is rejected as oversized.
const MaxRow = 256 << 10

// Page is one page of a paged endpoint. The simulator encodes it with
// concrete row types; the adapter decodes items as json.RawMessage so that
// one malformed row cannot fail the page.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
	HasMore    bool   `json:"hasMore,omitempty"`   // sales only
	Watermark  string `json:"watermark,omitempty"` // tokens only
}

// Group is one collection's rows on a grouped endpoint.
type Group[T any] struct {
	CollectionID string `json:"collectionId"`
	Rows         []T    `json:"rows"`
}

// RatesAnswer is the price-feed answer.
type RatesAnswer struct {
	Rates map[string]json.RawMessage `json:"rates"`
	AsOf  string                     `json:"asOf,omitempty"`
}

// DecodePage decodes a page body whose items are kept undecoded. A body
// that is not a JSON object of the page shape, or larger than MaxBody, is
// an error of class "bad_payload".
func DecodePage[T any](r io.Reader) (*Page[T], error) {
	body, err := readBody(r, MaxBody)
	if err != nil {
		return nil, err
	}
	var p Page[T]
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, classed(ClassBadPayload, err)
	}
	return &p, nil
}

// readBody reads at most limit bytes of r.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	return readBodyInto(new(bytes.Buffer), r, limit, -1)
}

// readBodyInto reads at most limit bytes of r into buf (reset first),
// with the announced size (-1 when unknown) as a capacity hint. The body
// is buf's bytes, valid until buf is written again.
func readBodyInto(buf *bytes.Buffer, r io.Reader, limit, size int64) ([]byte, error) {
	buf.Reset()
	// Room for the body and for ReadFrom's last read, which needs MinRead
	// free bytes to see the end (size+1 made it reallocate every body).
	buf.Grow(int(min(max(size, 0), limit) + bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	body := buf.Bytes()
	if err != nil {
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			return nil, classed(ClassTimeout, err)
		}
		return nil, classed(ClassTransport, err)
	}
	if int64(len(body)) > limit {
		return nil, classed(ClassBadPayload, fmt.Errorf("body larger than %d bytes", limit))
	}
	return body, nil
}

// Rows is one page's rows of type R, decoded leniently: rows that are not
// objects of R's shape are in Rejects (as *normalize.RejectError), the
// others in Rows.
type Rows[R any] struct {
	Rows    []R
	Rejects []error
}

// RowsGroup is one collection's leniently decoded rows.
type RowsGroup[R any] struct {
	CollectionID string
	Rows         []R
	Rejects      []error
}

// The fast paths below decode a whole page with github.com/goccy/go-json
// (after its validity scan), which reads these pages to the same values
// as encoding/json (TestFastDecodeMatchesStd, FuzzFastDecodeMatchesStd)
// at about a third of the cost; upstream pages are ingest's largest
// decoding cost. Anything it does not accept is decided
// by encoding/json, as before: which rows are rejected, and why.

// DecodeFlat decodes a flat page leniently. The fast path decodes the
// page in one pass; only when some row does not fit R does it decode row
// by row, so a bad row rejects that row alone. A body that is not JSON of
// the page shape fails with class "bad_payload".
func DecodeFlat[R any](body []byte) (*Page[R], []error, error) {
	var fast Page[R]
	if fastDecode(body, &fast) {
		return &fast, nil, nil
	}
	fast = Page[R]{}
	err := json.Unmarshal(body, &fast)
	if err == nil {
		return &fast, nil, nil
	}
	if isSyntax(err) {
		return nil, nil, classed(ClassBadPayload, err)
	}
	var slow Page[json.RawMessage]
	if err := json.Unmarshal(body, &slow); err != nil {
		return nil, nil, classed(ClassBadPayload, err)
	}
	out := &Page[R]{NextCursor: slow.NextCursor, HasMore: slow.HasMore, Watermark: slow.Watermark}
	var rejects []error
	for _, raw := range slow.Items {
		var r R
		if err := DecodeRow(raw, &r); err != nil {
			rejects = append(rejects, err)
			continue
		}
		out.Items = append(out.Items, r)
	}
	return out, rejects, nil
}

// DecodeGrouped is DecodeFlat for grouped pages.
func DecodeGrouped[R any](body []byte) (*Page[RowsGroup[R]], error) {
	var fast Page[Group[R]]
	ok := fastDecode(body, &fast)
	var err error
	if !ok {
		fast = Page[Group[R]]{}
		err = json.Unmarshal(body, &fast)
	}
	if err == nil {
		out := &Page[RowsGroup[R]]{NextCursor: fast.NextCursor, Watermark: fast.Watermark, Items: make([]RowsGroup[R], len(fast.Items))}
		for i, g := range fast.Items {
			out.Items[i] = RowsGroup[R]{CollectionID: g.CollectionID, Rows: g.Rows}
		}
		return out, nil
	}
	if isSyntax(err) {
		return nil, classed(ClassBadPayload, err)
	}
	var slow Page[Group[json.RawMessage]]
	if err := json.Unmarshal(body, &slow); err != nil {
		return nil, classed(ClassBadPayload, err)
	}
	out := &Page[RowsGroup[R]]{NextCursor: slow.NextCursor, Watermark: slow.Watermark, Items: make([]RowsGroup[R], len(slow.Items))}
	for i, g := range slow.Items {
		out.Items[i].CollectionID = g.CollectionID
		for _, raw := range g.Rows {
			var r R
			if err := DecodeRow(raw, &r); err != nil {
				out.Items[i].Rejects = append(out.Items[i].Rejects, err)
				continue
			}
			out.Items[i].Rows = append(out.Items[i].Rows, r)
		}
	}
	return out, nil
}

// LazyGroup is one collection's rows on a grouped page, kept as the bytes
// the upstream sent until Decode: a caller that can tell from the bytes
// that nothing changed since its last poll skips decoding them.
type LazyGroup[R any] struct {
	CollectionID string
	// Raw is the rows array as sent (nil when absent or null). It may
	// alias the page's body (see DecodeLazyGrouped): valid while that is.
	Raw json.RawMessage
}

// lazyGroup is the wire shape LazyGroup is decoded from.
type lazyGroup struct {
	CollectionID string          `json:"collectionId"`
	Rows         json.RawMessage `json:"rows"`
}

// DecodeLazyGrouped decodes a grouped page down to each group's collection
// id and raw rows. A body that is not JSON of the page shape, or a group
// whose rows are not an array (or null), fails with class "bad_payload",
// as with DecodeGrouped.
//
// The groups' raw rows alias body when it is a plain page (scanLazyPage),
// which is every page a well-behaved upstream sends: copying them was
// about a tenth of the bytes a large step allocated, and most groups are
// only hashed, found unchanged and dropped. Other pages are decoded into
// copies. Either way the caller must not keep Raw beyond body's life.
func DecodeLazyGrouped[R any](body []byte) (*Page[LazyGroup[R]], error) {
	p, ok := scanLazyPage(body)
	if !ok {
		p = Page[lazyGroup]{}
		if !fastDecode(body, &p) {
			p = Page[lazyGroup]{}
			if err := json.Unmarshal(body, &p); err != nil {
				return nil, classed(ClassBadPayload, err)
			}
		}
	}
	out := &Page[LazyGroup[R]]{NextCursor: p.NextCursor, Watermark: p.Watermark, Items: make([]LazyGroup[R], len(p.Items))}
	for i, g := range p.Items {
		raw := bytes.TrimSpace(g.Rows)
		switch {
		case len(raw) == 0 || string(raw) == "null":
			raw = nil
		case raw[0] != '[':
			return nil, classed(ClassBadPayload, fmt.Errorf("group %d: rows is not an array", i))
		}
		out.Items[i] = LazyGroup[R]{CollectionID: g.CollectionID, Raw: raw}
	}
	return out, nil
}

// Decode decodes the group's rows leniently, as DecodeGrouped does: rows
// that are not objects of R's shape are returned in rejects (as
// *normalize.RejectError), the others in rows.
func (g LazyGroup[R]) Decode() (rows []R, rejects []error) {
	if g.Raw == nil {
		return nil, nil
	}
	// Rows are decoded in one pass unless one does not fit R, or the group
	// is large enough to hold a row above MaxRow: then row by row.
	if len(g.Raw) <= MaxRow {
		if fastDecode(g.Raw, &rows) {
			return rows, nil
		}
		rows = nil
		if json.Unmarshal(g.Raw, &rows) == nil {
			return rows, nil
		}
		rows = nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(g.Raw, &raws); err != nil {
		// DecodeLazyGrouped let through only arrays of valid JSON.
		return nil, []error{&normalize.RejectError{Reason: normalize.RejectBadJSON, Field: "rows", Detail: err.Error()}}
	}
	for _, raw := range raws {
		var r R
		if err := DecodeRow(raw, &r); err != nil {
			rejects = append(rejects, err)
			continue
		}
		rows = append(rows, r)
	}
	return rows, rejects
}

// fastDecode decodes body into v with the fast decoder and reports
// whether it accepted it. A body that is not valid JSON is left to
// encoding/json (the fast decoder skips unknown fields without checking
// them). It never panics: a decoder bug is a rejection, and encoding/json
// then decides.
func fastDecode(body []byte, v any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return gojson.Valid(body) && gojson.Unmarshal(body, v) == nil
}

func isSyntax(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF)
}

// DecodeRow decodes one row into v. A row that is not a JSON object of the
// row's shape is rejected as bad_json; a row above MaxRow as oversized_field.
func DecodeRow(raw json.RawMessage, v any) error {
	if len(raw) > MaxRow {
		return &normalize.RejectError{Reason: normalize.RejectOversized, Field: "row", Detail: fmt.Sprintf("%d bytes", len(raw))}
	}
	if len(raw) == 0 || raw[0] != '{' {
		return &normalize.RejectError{Reason: normalize.RejectBadJSON, Field: "row", Detail: "not an object"}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &normalize.RejectError{Reason: normalize.RejectBadJSON, Field: "row", Detail: err.Error()}
	}
	return nil
}

// Page decoders for walk.

// RawGroup is one collection's undecoded rows.
type RawGroup = Group[json.RawMessage]

func flat[R any](body []byte) (Rows[R], string, error) {
	p, rejects, err := DecodeFlat[R](body)
	if err != nil {
		return Rows[R]{}, "", err
	}
	return Rows[R]{Rows: p.Items, Rejects: rejects}, p.NextCursor, nil
}

type groupedPage[R any] struct {
	groups    []RowsGroup[R]
	watermark string
}

func grouped[R any](body []byte) (groupedPage[R], string, error) {
	p, err := DecodeGrouped[R](body)
	if err != nil {
		return groupedPage[R]{}, "", err
	}
	return groupedPage[R]{groups: p.Items, watermark: p.Watermark}, p.NextCursor, nil
}

func lazyGrouped[R any](body []byte) ([]LazyGroup[R], string, error) {
	p, err := DecodeLazyGrouped[R](body)
	if err != nil {
		return nil, "", err
	}
	return p.Items, p.NextCursor, nil
}
