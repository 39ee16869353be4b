package projector

import (
	"encoding/binary"
	"errors"
	"sort"
	"strings"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// Applying a batch reads nothing from the store while it applies: load
// reads, before each message is applied, its collection's state and the
// inputs of other subjects it needs (its source's poll statuses, the poll
// times, the rates, whether its sales are stored: sales.go), and save
// writes what the messages changed when the batch finishes. The token
// blocks, an index of the whole market that nothing a batch renders
// reads, are updated when the batch finishes (tokens.go).

// errNotLoaded is a message applied before load read what it needs: a
// fault of this package, never of the data.
var errNotLoaded = errors.New("projector: a message was applied before its inputs were loaded")

// load reads what applying msg needs and apply does not read itself.
func (a *applier) load(msg *readmodel.Message) error {
	cid := msg.CollectionID
	if cid != "" {
		st, err := a.state(cid)
		if err != nil {
			return err
		}
		switch msg.Kind {
		case readmodel.KindListings, readmodel.KindCollection, readmodel.KindStatus:
			if err := st.listings(); err != nil { // the feed's diff, and the rows a listings message replaces
				return err
			}
		}
	}
	switch msg.Kind {
	case readmodel.KindStats, readmodel.KindAnalytics, readmodel.KindListings, readmodel.KindStatus:
		if _, err := a.status(msg.Source, cid); err != nil { // its source's failure, healed or begun
			return err
		}
	}
	switch msg.Kind {
	case readmodel.KindStatus:
		if _, err := a.polledAt(string(msg.Source)); err != nil {
			return err
		}
	case readmodel.KindRates:
		if _, err := a.status(readmodel.SourcePriceFeed, ""); err != nil {
			return err
		}
	case readmodel.KindSales:
		if err := a.loadSales(msg); err != nil {
			return err
		}
	case readmodel.KindPolled:
		if msg.Polled != nil {
			if _, err := a.polledAt(msg.Polled.Poll); err != nil {
				return err
			}
		}
	}
	if msg.Kind == readmodel.KindRates || msg.Source == readmodel.SourcePriceFeed {
		if _, err := a.storedRates(); err != nil {
			return err
		}
	}
	return nil
}

// statusKey is the key of (src, cid)'s status in applier.statuses.
func statusKey(src readmodel.Source, cid string) string { return string(src) + "\x00" + cid }

// loaded returns collection cid's state as load read it.
func (a *applier) loaded(cid string) (*collState, error) {
	if s, ok := a.states[cid]; ok {
		return s, nil
	}
	return nil, errNotLoaded
}

// loadedStatus returns the stored status of (src, cid) as load read it
// (or as applying changed it).
func (a *applier) loadedStatus(src readmodel.Source, cid string) (*statusInput, error) {
	if s, ok := a.statuses[statusKey(src, cid)]; ok {
		return s, nil
	}
	return nil, errNotLoaded
}

// latestStatus is status over what load read: the latest status of
// (src, cid), or of the source-wide poll when that one came later.
func (a *applier) latestStatus(src readmodel.Source, cid string) (*statusInput, error) {
	s, err := a.loadedStatus(src, cid)
	if err != nil || cid == "" {
		return s, err
	}
	w, err := a.loadedStatus(src, "")
	if err != nil {
		return nil, err
	}
	if w != nil && (s == nil || w.Seq > s.Seq) {
		return w, nil
	}
	return s, nil
}

// putStatus records the status of (src, cid); save writes it.
func (a *applier) putStatus(src readmodel.Source, cid string, st statusInput) {
	k := statusKey(src, cid)
	if a.statuses == nil {
		a.statuses = map[string]*statusInput{}
	}
	a.statuses[k] = &st
	if a.statusSaves == nil {
		a.statusSaves = map[string]bool{}
	}
	a.statusSaves[k] = true
}

// polledAt returns when poll last succeeded as applied, in unix ms (0:
// unknown), reading it at most once per transaction.
func (a *applier) polledAt(poll string) (int64, error) {
	if ms, ok := a.polled[poll]; ok {
		return ms, nil
	}
	raw, err := a.tx.GetRaw(store.InPolled, poll)
	if err != nil {
		return 0, err
	}
	if a.polled == nil {
		a.polled = map[string]int64{}
	}
	a.polled[poll] = polledMs(raw)
	return a.polled[poll], nil
}

// loadedPolled is polledAt over what load read.
func (a *applier) loadedPolled(poll string) (int64, error) {
	if ms, ok := a.polled[poll]; ok {
		return ms, nil
	}
	return 0, errNotLoaded
}

// putPolled records that poll last succeeded at ms; save writes it.
func (a *applier) putPolled(poll string, ms int64) {
	a.polled[poll] = ms
	if a.polledSaves == nil {
		a.polledSaves = map[string]bool{}
	}
	a.polledSaves[poll] = true
}

// storedRates returns the USD rates as stored (nil: none), reading them
// at most once per transaction.
func (a *applier) storedRates() (readmodel.USDRates, error) {
	if a.ratesRead {
		return a.rates, nil
	}
	r, err := input[readmodel.USDRates](a.tx, store.InRates)
	if err != nil {
		return nil, err
	}
	if r != nil {
		a.rates = *r
	}
	a.ratesRead = true
	return a.rates, nil
}

// saveInputs writes the inputs of other subjects than collection states
// that applying changed: sales, statuses and poll times (in key order),
// the rates and the quote they make, a queued re-render job.
func (a *applier) saveInputs() error {
	a.saveSales()
	keys := make([]string, 0, len(a.statusSaves))
	for k := range a.statusSaves {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		src, cid, _ := strings.Cut(k, "\x00")
		a.tx.Put(store.InStatus, a.statuses[k], src, cid)
	}
	a.statusSaves = nil
	polls := make([]string, 0, len(a.polledSaves))
	for p := range a.polledSaves {
		polls = append(polls, p)
	}
	sort.Strings(polls)
	for _, p := range polls {
		a.tx.PutRaw(store.InPolled, binary.BigEndian.AppendUint64(nil, uint64(a.polled[p])), p)
	}
	a.polledSaves = nil
	if a.ratesChanged {
		a.tx.Put(store.InRates, a.rates)
		a.ratesChanged = false
	}
	if a.quoteChanged {
		// The quote the store fills prepared bodies with: the rates, and
		// whether the price feed's latest status is healthy.
		if !a.ratesRead {
			return errNotLoaded
		}
		st, err := a.loadedStatus(readmodel.SourcePriceFeed, "")
		if err != nil {
			return err
		}
		a.tx.PutQuote(a.rates, st == nil || st.Status.OK)
		a.quoteChanged = false
	}
	if a.jobQueued {
		// A newer job restarts the walk, so every collection sees the
		// latest change.
		a.tx.Put(store.InJob, job{}, jobName)
		a.jobQueued = false
	}
	return nil
}
