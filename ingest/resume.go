package ingest

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// A new ingest process remembers nothing of what was published, and
// neither does one that just took the ingest lease (another holder may
// have published since). Without a StateReader its first cycle publishes
// every subject again: at 100,000 collections x 100 tokens that was 1.12
// million messages, which every node of the tier then applied for about
// 14 minutes. With one, that cycle first reads back the state stream (the
// last message of every subject) and learns from it what a cycle would
// otherwise have to remember:
//   - each subject's content hash (hashOf of the message as published, as
//     of its ObservedAt: the cycle normalizes every page as of its start,
//     so a time-less listing row carries that time and hashes as it did);
//   - each poll status, with its last good and failing-since times (a
//     restart kept neither before), and when each poll last succeeded
//     (the last good time of a collection with no status);
//   - how many buckets each bucketed subject was last published in.
//
// Only what differs from the bus is then published. With a MarkStore it
// also learns the polls' resume points (the token watermark, the sales
// cursor), which every cycle saves once its publishes are acknowledged:
// the points as they were after the cycle before, so that what they
// cover was acknowledged a whole cycle earlier and has long been
// written to disk (the bus syncs every second). Without them the first
// cycle polls every token (publishing only changed buckets) and offers
// the sales the upstream still has again. The raw-rows memos start over. A
// cycle that resumed is not full: telling the nodes that passed over gaps
// of a damaged stream that they are whole again is still a full cycle's
// job (RunFullCycle). On an empty stream, one that cannot be read or one
// with a message that does not decode, the cycle is full, as before.

// StateReader reads back the state stream. cmd/marketd passes bus.State.
type StateReader interface {
	// LastPerSubject calls fn, possibly from several goroutines at once,
	// with the last message of every state subject; a message that does
	// not decode is passed over and counted in skipped.
	LastPerSubject(ctx context.Context, fn func(*readmodel.Message) error) (read, skipped int, err error)
}

// MarkStore keeps the polls' resume points on the bus. cmd/marketd passes
// bus.State.
type MarkStore interface {
	// LoadMarks returns what SaveMarks last stored (empty: none).
	LoadMarks(ctx context.Context) (map[string]string, error)
	// SaveMarks replaces the stored marks.
	SaveMarks(ctx context.Context, marks map[string]string) error
}

// resume replaces what in remembers of published subjects with what the
// state stream holds (see the top of this file). Called with cycleMu held
// at the start of a cycle, before beginFull. When the stream is empty,
// cannot be read or holds a message that does not decode, it asks for a
// full cycle instead (in.full), as without a StateReader; when ctx ends
// during the read it changes nothing and the read stays due. It records
// the outcome in c's summary.
func (in *Ingest) resume(ctx context.Context, c *cycle) {
	var (
		mu     sync.Mutex
		hashes = map[hkey][16]byte{}
		status = map[hkey]statusState{}
		polled = map[string]int64{}
		parts  = map[hkey]int{}
	)
	began := time.Now()
	read, skipped, err := in.cfg.State.LastPerSubject(ctx, func(m *readmodel.Message) error {
		switch m.Kind {
		case readmodel.KindStatus:
			if m.Status == nil {
				return nil
			}
			st := statusOf(m.Status)
			mu.Lock()
			status[statusKey(m.Source, m.CollectionID)] = st
			mu.Unlock()
		case readmodel.KindPolled:
			if m.Polled == nil {
				return nil
			}
			mu.Lock()
			polled[m.Polled.Poll] = max(polled[m.Polled.Poll], unixNano(m.Polled.At))
			mu.Unlock()
		case readmodel.KindListings, readmodel.KindTokens, readmodel.KindCollection,
			readmodel.KindRates, readmodel.KindStats, readmodel.KindAnalytics:
			h := hashOf(m, m.ObservedAt)
			subj := subject(m)
			mu.Lock()
			hashes[subj] = h
			if m.Buckets > 0 {
				pk := subjectOf(m.Kind, m.Source, m.CollectionID, 0)
				parts[pk] = max(parts[pk], int(m.Bucket)+1, int(m.Buckets))
			}
			mu.Unlock()
		}
		return nil
	})
	if ctx.Err() != nil {
		return // the cycle ends without polling; the next one reads again
	}
	in.resumeDue = false
	c.sum.Resumed = &Resumed{Read: read, Skipped: skipped, TookMS: time.Since(began).Milliseconds()}
	if err != nil {
		c.sum.Resumed.Error = err.Error()
	} else {
		c.sum.Resumed.Subjects = len(hashes) + len(status)
		in.hashes, in.status, in.polled, in.parts = hashes, status, polled, parts
		clear(in.listMemos)
		if in.cfg.Marks != nil && read > 0 && skipped == 0 {
			// Marks that cannot be loaded: the polls start over, as
			// without a MarkStore (nothing is missed, more is polled).
			if marks, err := in.cfg.Marks.LoadMarks(ctx); err != nil {
				c.sum.Resumed.MarksError = err.Error()
			} else {
				in.marks = make(map[string]string, len(marks))
				maps.Copy(in.marks, marks)
				c.sum.Resumed.Marks = len(marks)
			}
		}
	}
	// An empty stream (a new bus, or a purged one), one that could not be
	// read, or one holding garbage: the cycle is full, as without a
	// StateReader, so that it ends with the marker that tells the nodes
	// their views are whole (a cold start ends on it, a node that passed
	// over gaps is ready again after it).
	if read == 0 || err != nil || skipped > 0 {
		in.full = true
	}
}
