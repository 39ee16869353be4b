package client

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// decodedAs is the type the client decodes each documented path's 200 body
// into (the calls in api.go); nil: kept as raw JSON.
var decodedAs = map[string]reflect.Type{
	"/v1":                                    reflect.TypeFor[wire.Envelope[Index]](),
	"/v1/openapi.json":                       nil,
	"/v1/collections":                        reflect.TypeFor[Page[CollectionSummary]](),
	"/v1/collections/{id}":                   reflect.TypeFor[wire.Envelope[CollectionDetail]](),
	"/v1/collections/{id}/floor":             reflect.TypeFor[wire.Envelope[FloorResponse]](),
	"/v1/collections/{id}/floor/history":     reflect.TypeFor[wire.Envelope[FloorHistory]](),
	"/v1/collections/{id}/listings":          reflect.TypeFor[ListingsPage](),
	"/v1/collections/{id}/sales":             reflect.TypeFor[Page[readmodel.MarketItem]](),
	"/v1/collections/{id}/events":            reflect.TypeFor[Page[Event]](),
	"/v1/collections/{id}/sweep":             reflect.TypeFor[SweepResponse](),
	"/v1/events":                             reflect.TypeFor[Page[Event]](),
	"/v1/status":                             reflect.TypeFor[wire.Envelope[Status]](),
	"/v1/tokens":                             reflect.TypeFor[wire.Envelope[[]wire.TokenResult]](),
	"/v1/tokens/{chain}/{address}/{tokenId}": reflect.TypeFor[wire.Envelope[TokenDetail]](),
}

// schema is the part of a JSON Schema the walk reads.
type schema struct {
	Ref        string             `json:"$ref"`
	Type       any                `json:"type"` // a name or a list of names
	Properties map[string]*schema `json:"properties"`
	Items      *schema            `json:"items"`
	OneOf      []*schema          `json:"oneOf"`
	AnyOf      []*schema          `json:"anyOf"`
}

type openAPI struct {
	Paths map[string]map[string]struct {
		Responses map[string]struct {
			Content map[string]struct {
				Schema *schema `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

func loadOpenAPI(t *testing.T) *openAPI {
	t.Helper()
	b, err := os.ReadFile("../httpapi/openapi.json")
	require.NoError(t, err)
	var doc openAPI
	require.NoError(t, json.Unmarshal(b, &doc))
	return &doc
}

// schemaWalk compares a response schema with the Go type decoded from it.
type schemaWalk struct {
	doc  *openAPI
	errs []string
}

func (w *schemaWalk) failf(at, format string, args ...any) {
	w.errs = append(w.errs, at+": "+fmt.Sprintf(format, args...))
}

func (w *schemaWalk) resolve(s *schema) *schema {
	for s != nil && s.Ref != "" {
		s = w.doc.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
	}
	return s
}

// split returns s's alternatives other than null, and whether null is one.
func (w *schemaWalk) split(s *schema) (alts []*schema, nullable bool) {
	s = w.resolve(s)
	if s == nil {
		return nil, false
	}
	if subs := append(append([]*schema(nil), s.OneOf...), s.AnyOf...); len(subs) > 0 {
		for _, sub := range subs {
			a, n := w.split(sub)
			alts, nullable = append(alts, a...), nullable || n
		}
		return alts, nullable
	}
	types, null := typeNames(s)
	if len(types) == 0 && s.Properties == nil && s.Items == nil {
		return nil, null
	}
	return []*schema{s}, null
}

func typeNames(s *schema) (names []string, null bool) {
	switch v := s.Type.(type) {
	case string:
		names = []string{v}
	case []any:
		for _, x := range v {
			names = append(names, x.(string))
		}
	}
	out := names[:0]
	for _, n := range names {
		if n == "null" {
			null = true
		} else {
			out = append(out, n)
		}
	}
	return out, null
}

// jsonFields lists the JSON fields of struct type t, embedded structs
// (and pointers to them) flattened, as encoding/json sees them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}

// check walks schema s against Go type t at path at: every property the
// document declares must be a field of t (and every field of t a property),
// nullable values must decode into a type that can be null, and each
// value's kind must agree.
func (w *schemaWalk) check(s *schema, t reflect.Type, at string) {
	alts, nullable := w.split(s)
	if t == reflect.TypeFor[json.RawMessage]() {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		t = t.Elem()
	case reflect.Slice, reflect.Map, reflect.Interface:
	default:
		if nullable {
			w.failf(at, "the document allows null, but %s cannot hold it", t)
		}
	}
	if len(alts) == 0 {
		return
	}
	if t.Kind() == reflect.Struct {
		// Objects: the union of the alternatives' properties.
		props := map[string]bool{}
		for _, a := range alts {
			if types, _ := typeNames(a); a.Properties == nil && !contains(types, "object") {
				w.failf(at, "%s is a struct, the document a %v", t, a.Type)
				continue
			}
			fields := jsonFields(t)
			names := make([]string, 0, len(a.Properties))
			for n := range a.Properties {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				props[n] = true
				ft, ok := fields[n]
				if !ok {
					w.failf(at, "the document's field %q is missing from %s", n, t)
					continue
				}
				w.check(a.Properties[n], ft, at+"."+n)
			}
		}
		for n := range jsonFields(t) {
			if !props[n] {
				w.failf(at, "%s has field %q, which the document does not declare", t, n)
			}
		}
		return
	}
	for _, a := range alts {
		types, _ := typeNames(a)
		if len(types) == 0 && a.Items != nil {
			types = []string{"array"}
		}
		for _, ty := range types {
			if !kindFits(ty, t) {
				w.failf(at, "the document says %s, the client decodes into %s", ty, t)
			}
		}
		if a.Items != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			w.check(a.Items, t.Elem(), at+"[]")
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func kindFits(ty string, t reflect.Type) bool {
	switch k := t.Kind(); ty {
	case "string":
		return k == reflect.String
	case "integer":
		return k >= reflect.Int && k <= reflect.Uint64
	case "number":
		return k >= reflect.Int && k <= reflect.Uint64 || k == reflect.Float32 || k == reflect.Float64
	case "boolean":
		return k == reflect.Bool
	case "array":
		return k == reflect.Slice || k == reflect.Array
	case "object":
		return k == reflect.Struct || k == reflect.Map
	}
	return false
}

// TestClientTypesCoverTheOpenAPIDocument walks the 200 response schema of
// every path the OpenAPI document describes against the type the client
// decodes it into: a field the document declares and the client type
// lacks (or the reverse), a null the type cannot hold, or a kind that
// disagrees fails here.
func TestClientTypesCoverTheOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	var documented []string
	for p, ops := range doc.Paths {
		// JSON answers only: the reference page and its script are for
		// browsers, and the client has no call for them.
		if op, ok := ops["get"]; ok && op.Responses["200"].Content["application/json"].Schema != nil {
			documented = append(documented, p)
		}
	}
	sort.Strings(documented)
	var decoded []string
	for p := range decodedAs {
		decoded = append(decoded, p)
	}
	sort.Strings(decoded)
	require.Equal(t, documented, decoded, "every documented path has a call, and no call an undocumented path")
	for _, p := range documented {
		t.Run(p, func(t *testing.T) {
			typ := decodedAs[p]
			if typ == nil {
				return
			}
			s := doc.Paths[p]["get"].Responses["200"].Content["application/json"].Schema
			require.NotNil(t, s, "200 schema")
			w := &schemaWalk{doc: doc}
			w.check(s, typ, p)
			assert.Empty(t, w.errs)
		})
	}
}

// TestSchemaWalkFails: the walk reports what it is for, on types that
// drifted from the document.
func TestSchemaWalkFails(t *testing.T) {
	type noFees struct {
		readmodel.MarketItem
		BuyerPrice *readmodel.Price `json:"buyerPrice"`
	}
	type extra struct {
		wire.ListingItem
		Depth int `json:"depth"`
	}
	type rankText struct {
		Rank *string `json:"rank"`
	}
	type strictUSD struct {
		Raw      string  `json:"raw"`
		Decimal  float64 `json:"decimal"`
		Currency string  `json:"currency"`
		USD      float64 `json:"usd"`
	}
	tests := []struct {
		name   string
		schema *schema
		typ    reflect.Type
		want   string
	}{
		{"a field the type lacks", &schema{Ref: "#/components/schemas/ListingItem"}, reflect.TypeFor[noFees](), `field "fees" is missing`},
		{"a field the document lacks", &schema{Ref: "#/components/schemas/ListingItem"}, reflect.TypeFor[extra](), `has field "depth"`},
		{"a kind that disagrees", &schema{Ref: "#/components/schemas/TokenDetail"}, reflect.TypeFor[struct {
			TokenDetail
			Rarity rankText `json:"rarity"`
		}](), "says number"},
		{"a null the type cannot hold", &schema{Ref: "#/components/schemas/Price"}, reflect.TypeFor[strictUSD](), "cannot hold it"},
	}
	doc := loadOpenAPI(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &schemaWalk{doc: doc}
			w.check(tc.schema, tc.typ, "x")
			require.NotEmpty(t, w.errs)
			assert.Contains(t, strings.Join(w.errs, "\n"), tc.want)
		})
	}
}
