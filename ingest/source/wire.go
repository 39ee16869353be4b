package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/marketd/marketd/readmodel"
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

// DecodePage decodes a page body. A body that is not a JSON object of the
// page shape, or larger than MaxBody, is an error of class "bad_payload".
func DecodePage[T any](r io.Reader) (*Page[T], error) {
	var p Page[T]
	if err := decodeBody(r, &p, MaxBody); err != nil {
		return nil, err
	}
	return &p, nil
}

func decodeBody(r io.Reader, v any, limit int64) error {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	dec := json.NewDecoder(lr)
	if err := dec.Decode(v); err != nil {
		if lr.N <= 0 {
			return classed(ClassBadPayload, fmt.Errorf("body larger than %d bytes", limit))
		}
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			return classed(ClassTimeout, err)
		}
		return classed(ClassBadPayload, err)
	}
	if lr.N <= 0 {
		return classed(ClassBadPayload, fmt.Errorf("body larger than %d bytes", limit))
	}
	return nil
}

// DecodeRow decodes one row into v. A row that is not a JSON object of the
// row's shape is rejected as bad_json; a row above MaxRow as oversized_field.
func DecodeRow(raw json.RawMessage, v any) error {
	if len(raw) > MaxRow {
		return &readmodel.RejectError{Reason: readmodel.RejectOversized, Field: "row", Detail: fmt.Sprintf("%d bytes", len(raw))}
	}
	if len(raw) == 0 || raw[0] != '{' {
		return &readmodel.RejectError{Reason: readmodel.RejectBadJSON, Field: "row", Detail: "not an object"}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &readmodel.RejectError{Reason: readmodel.RejectBadJSON, Field: "row", Detail: err.Error()}
	}
	return nil
}
