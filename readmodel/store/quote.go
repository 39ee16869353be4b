package store

import (
	"encoding/json"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// kQuote holds the USD quote the store fills prepared bodies with: a view
// (Digest covers it), as the 8-byte version field every view starts with
// (unused: zero) and then quoteInput as JSON.
var kQuote = []byte("v/q")

type quoteInput struct {
	Rates  readmodel.USDRates `json:"rates"`
	FeedOK bool               `json:"feedOK"`
}

// PutQuote records the price feed's latest rates and whether its latest
// poll succeeded; the store serves the quote built from them (USD) once
// the transaction commits.
func (t *Tx) PutQuote(rates readmodel.USDRates, feedOK bool) {
	b, err := json.Marshal(quoteInput{Rates: rates, FeedOK: feedOK})
	if err != nil {
		t.err = err
		return
	}
	t.set(kQuote, append(make([]byte, 8, 8+len(b)), b...))
	t.quote = render.NewUSDQuote(rates, feedOK)
}

// USD returns the current USD quote (one that knows no rate before the
// price feed was first projected). It is an atomic load after the first
// call; the result is immutable and shared.
func (s *Store) USD() *render.USDQuote {
	if q := s.quote.Load(); q != nil {
		return q
	}
	q := render.NewUSDQuote(nil, false)
	if b, ok, err := s.get(kQuote); err == nil && ok && len(b) >= 8 {
		var in quoteInput
		if json.Unmarshal(b[8:], &in) == nil {
			q = render.NewUSDQuote(in.Rates, in.FeedOK)
		}
	}
	// A commit may have stored a newer quote meanwhile: keep that one.
	if s.quote.CompareAndSwap(nil, q) {
		return q
	}
	return s.quote.Load()
}

// Reads fill USD slots once, when a view enters the cache: the hot path
// then writes prepared bytes as is. A quote change empties the cache (see
// Update), so no view outlives the quote it was filled with.

// filled returns b with its USD slots filled from q (b itself when it has
// none).
func filled(b []byte, q *render.USDQuote) []byte {
	if render.NextUSDSlot(b) < 0 {
		return b
	}
	return render.AppendUSD(make([]byte, 0, len(b)+16), b, q)
}

func filledTimed(tb render.TimedBody, q *render.USDQuote) render.TimedBody {
	tb.Head, tb.Tail = filled(tb.Head, q), filled(tb.Tail, q)
	return tb
}
