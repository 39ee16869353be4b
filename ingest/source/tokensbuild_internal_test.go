package source

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// countSink counts rejections; tokensBuild emits nothing itself.
type countSink struct{ rejected int }

func (s *countSink) Reject(_ error, n int) { s.rejected += n }
func (s *countSink) Emit(Unit) error       { return nil }

// wantBuckets is what tokensBuild must return, written the plain way:
// every accepted token in bucket TokenBucket(TokenKey) of
// BucketCount(accepted), each bucket sorted by TokenID with ties in the
// upstream's order, an empty bucket's Tokens nil.
func wantBuckets(id string, rows []normalize.RawToken, now time.Time) []*readmodel.Message {
	docs := normalizeTokens(&countSink{}, id, rows, now)
	nb := BucketCount(len(docs))
	buckets := make([][]readmodel.TokenDoc, nb)
	for _, d := range docs {
		b := readmodel.TokenBucket(readmodel.TokenKey(d.Chain, d.ContractAddress, d.TokenID), nb)
		buckets[b] = append(buckets[b], d)
	}
	msgs := make([]*readmodel.Message, nb)
	for b, toks := range buckets {
		sort.SliceStable(toks, func(i, j int) bool { return toks[i].TokenID < toks[j].TokenID })
		msgs[b] = &readmodel.Message{Bucket: uint32(b), Buckets: uint32(nb), Tokens: toks}
	}
	return msgs
}

func rawTokens(contracts []string, ids ...string) []normalize.RawToken {
	var out []normalize.RawToken
	for i, id := range ids {
		c := contracts[i%len(contracts)]
		out = append(out, normalize.RawToken{Chain: "ethereum", Contract: c, TokenID: id,
			Owner: fmt.Sprintf("0x%040x", i+1), Name: fmt.Sprintf("%s #%s", c, id)})
	}
	return out
}

func TestTokensBuildBucketsSortedByTokenID(t *testing.T) {
	const id = "ethereum_0x00000000000000000000000000000000000000aa"
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	one := []string{"0x00000000000000000000000000000000000000aa"}
	two := append(one, "0x00000000000000000000000000000000000000bb")
	many := func(n int) []string {
		var ids []string
		for i := n; i > 0; i-- { // numeric order is not TokenID (string) order
			ids = append(ids, fmt.Sprint(i))
		}
		return ids
	}
	bad := rawTokens(one, "1", "2", "3")
	bad[1].Owner = "not an address"

	tests := []struct {
		name     string
		rows     []normalize.RawToken
		buckets  int
		rejected int
	}{
		{name: "no tokens", rows: nil, buckets: 1},
		{name: "one bucket, already sorted", rows: rawTokens(one, "1", "10", "2", "3"), buckets: 1},
		{name: "one bucket, unsorted", rows: rawTokens(one, many(100)...), buckets: 1},
		{name: "ties keep the upstream order", rows: rawTokens(two, "7", "7", "3", "3", "1"), buckets: 1},
		{name: "a rejected token leaves its place", rows: bad, buckets: 1, rejected: 1},
		{name: "four buckets", rows: rawTokens(two, many(300)...), buckets: 4},
		{name: "sixteen buckets with ties", rows: rawTokens(two, append(many(1000), many(1000)...)...), buckets: 16},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sink := &countSink{}
			got := tokensBuild(sink, id, RowsGroup[normalize.RawToken]{CollectionID: id, Rows: tc.rows}, now)
			want := wantBuckets(id, tc.rows, now)
			require.Len(t, got.Msgs, tc.buckets)
			assert.Equal(t, want, got.Msgs)
			assert.Equal(t, len(tc.rows)-tc.rejected, got.Rows)
			assert.Equal(t, tc.rejected, sink.rejected)
			for _, m := range got.Msgs {
				assert.True(t, sort.SliceIsSorted(m.Tokens, func(i, j int) bool { return m.Tokens[i].TokenID < m.Tokens[j].TokenID }))
				if len(m.Tokens) == 0 {
					assert.Nil(t, m.Tokens, "an empty bucket's tokens encode as null, as before")
				}
			}
		})
	}
}

// BenchmarkTokensBuild builds one collection of 100 tokens (one bucket)
// as the simulator serves them: in numeric, not TokenID, order.
func BenchmarkTokensBuild(b *testing.B) {
	const id = "ethereum_0x00000000000000000000000000000000000000aa"
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := 1; i <= 100; i++ {
		ids = append(ids, fmt.Sprint(i))
	}
	g := RowsGroup[normalize.RawToken]{CollectionID: id, Rows: rawTokens([]string{"0x00000000000000000000000000000000000000aa"}, ids...)}
	sink := &countSink{}
	b.ReportAllocs()
	for b.Loop() {
		if got := tokensBuild(sink, id, g, now); got.Rows != 100 {
			b.Fatalf("built %d rows", got.Rows)
		}
	}
}
