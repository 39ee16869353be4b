package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"time"
)

// Deadlines: when a collection's snapshot next changes by the clock alone
// (a listing expires, a failing source's rows age out), indexed by time
// under m/x/ for the projector's sweep (Due) and remembered per
// collection under i/dl/<cid> to move its entry.

// SetDeadline records when cid's listing snapshot next changes by the clock
// alone (zero clears it).
func (t *Tx) SetDeadline(cid string, at time.Time) {
	dk := key(pDeadline, cid)
	now := unixMs(at)
	old, ok, err := t.getRaw(dk)
	if err != nil {
		t.err = errors.Join(t.err, err)
		return
	}
	var was int64
	if ok && len(old) == 8 {
		was = int64(binary.BigEndian.Uint64(old))
	}
	if ok && was == now {
		return
	}
	t.moveDeadline(pDeadlines, cid, was, now)
	switch {
	case now != 0:
		t.set(dk, binary.BigEndian.AppendUint64(nil, uint64(now)))
	case ok:
		t.del(dk)
	}
}

// unixMs is t in unix milliseconds, the deadline indexes' unit; 0 (no
// deadline) for the zero time.
func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// deadlineEntry is the key of id's entry in a deadline index (due reads
// them in order): index, the deadline in unix ms (big-endian), id.
func deadlineEntry(index []byte, ms uint64, id string) []byte {
	b := append(make([]byte, 0, len(index)+8+len(id)), index...)
	b = binary.BigEndian.AppendUint64(b, ms)
	return append(b, id...)
}

// DueCursor is where a walk of due deadlines stopped; nil is the start of
// the index.
type DueCursor []byte

// Due returns up to limit collections whose deadline is at or before now,
// after cursor, and the cursor after the last one returned.
//
// Walk with the cursor instead of from the start each time: rendering a
// due view deletes its entry, and Badger keeps the deleted keys until a
// compaction, so every walk from the start would skip past all the
// entries the walks before it consumed (a replay's final sweep of 77,000
// tokens spent a third of its time there). An entry a render re-adds at
// or before now lies behind the cursor and waits for the next walk.
func (s *Store) Due(ctx context.Context, now time.Time, after DueCursor, limit int) ([]string, DueCursor, error) {
	return s.due(pDeadlines, now, after, limit)
}

func (s *Store) due(index []byte, now time.Time, after DueCursor, limit int) ([]string, DueCursor, error) {
	var out []string
	next := after
	txn := s.kv.begin(false)
	defer txn.discard()
	err := txn.scan(index, after, false, func(full, _ []byte) (bool, error) {
		if len(out) >= limit {
			return false, nil
		}
		if after != nil && bytes.Equal(full, after) {
			return true, nil
		}
		k := full[len(index):]
		if len(k) < 8 || int64(binary.BigEndian.Uint64(k)) > now.UnixMilli() {
			return false, nil
		}
		out = append(out, string(k[8:]))
		next = append(DueCursor(nil), full...)
		return true, nil
	})
	return out, next, internal(err, "due deadlines")
}

// moveDeadline moves id's entry in a deadline index from was to now (unix
// ms; 0: none).
func (t *Tx) moveDeadline(index []byte, id string, was, now int64) {
	if was == now {
		return
	}
	if was != 0 {
		t.del(deadlineEntry(index, uint64(was), id))
	}
	if now != 0 {
		t.set(deadlineEntry(index, uint64(now), id), nil)
	}
}
