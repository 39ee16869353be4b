package store

import (
	"context"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// The floor history view (render.FloorHistory): one record per collection
// under h/f/<cid>. Like the change feed it is node-local history, outside
// `marketd digest`: it is what this node observed, and a node rebuilt from
// the compacted state stream observed only each subject's last message.
// A views snapshot carries it to a joining node.

// The record, after the 8-byte version: the distinct raw prices it uses
// (uvarint count, then each as a string), then the hours and then the
// days, each as a uvarint count followed by the buckets: the first one's
// start in widths since the epoch (varint), each next one's as a uvarint
// gap in widths, then a flag and the prices as indexes into the
// dictionary: one when open, high, low and close are equal (flag 0),
// else four. A floor repeats itself across buckets, so a week of hours
// and three months of days of a steady floor take about 3 bytes a bucket.
func encodeFloorHistory(version uint64, h *render.FloorHistory) []byte {
	e := newEnc(version)
	dict := map[string]uint64{}
	var order []string
	index := func(raw string) {
		if _, ok := dict[raw]; !ok {
			dict[raw] = uint64(len(order))
			order = append(order, raw)
		}
	}
	for _, bs := range [][]render.FloorBucket{h.Hours, h.Days} {
		for _, b := range bs {
			index(b.Open)
			index(b.High)
			index(b.Low)
			index(b.Close)
		}
	}
	e.u(uint64(len(order)))
	for _, raw := range order {
		e.str(raw)
	}
	for i, bs := range [][]render.FloorBucket{h.Hours, h.Days} {
		width := int64(3600)
		if i == 1 {
			width = 86400
		}
		e.u(uint64(len(bs)))
		for j, b := range bs {
			if j == 0 {
				e.i(b.Start / width)
			} else {
				e.u(uint64((b.Start - bs[j-1].Start) / width))
			}
			if b.Open == b.High && b.Open == b.Low && b.Open == b.Close {
				e.flag(false)
				e.u(dict[b.Open])
				continue
			}
			e.flag(true)
			e.u(dict[b.Open])
			e.u(dict[b.High])
			e.u(dict[b.Low])
			e.u(dict[b.Close])
		}
	}
	return e.b
}

var errCorruptFloorHistory = corruptRecord("floor history")

func decodeFloorHistory(v []byte) (*render.FloorHistory, uint64, error) {
	d, ver := newDec(v)
	n := d.u()
	if d.bad || n > uint64(len(d.b)) {
		return nil, 0, errCorruptFloorHistory
	}
	dict := make([]string, n)
	for i := range dict {
		dict[i] = d.str()
	}
	price := func() string {
		i := d.u()
		if i >= uint64(len(dict)) {
			d.bad = true
			return ""
		}
		return dict[i]
	}
	h := &render.FloorHistory{}
	for i, bs := range []*[]render.FloorBucket{&h.Hours, &h.Days} {
		width := int64(3600)
		if i == 1 {
			width = 86400
		}
		n := d.u()
		if d.bad || n > uint64(len(d.b)) {
			return nil, 0, errCorruptFloorHistory
		}
		out := make([]render.FloorBucket, 0, n)
		var start int64
		for j := uint64(0); j < n && !d.bad; j++ {
			if j == 0 {
				start = d.i() * width
			} else {
				start += int64(d.u()) * width
			}
			b := render.FloorBucket{Start: start}
			if d.flag() {
				b.Open, b.High, b.Low, b.Close = price(), price(), price(), price()
			} else {
				b.Open = price()
				b.High, b.Low, b.Close = b.Open, b.Open, b.Open
			}
			out = append(out, b)
		}
		*bs = out
	}
	if d.bad || len(d.b) != 0 {
		return nil, 0, errCorruptFloorHistory
	}
	return h, ver, nil
}

// FloorHistory returns collection cid's floor history as this transaction
// sees it; nil when it has none. A damaged record is an error.
func (t *Tx) FloorHistory(cid string) (*render.FloorHistory, error) {
	raw, ok, err := t.getRaw(key(pFloorHistory, cid))
	if err != nil || !ok {
		return nil, err
	}
	h, _, err := decodeFloorHistory(raw)
	return h, err
}

// PutFloorHistory writes collection cid's floor history at version.
func (t *Tx) PutFloorHistory(cid string, version uint64, h *render.FloorHistory) {
	k := key(pFloorHistory, cid)
	t.set(k, encodeFloorHistory(version, h))
	t.touched = append(t.touched, string(k))
}

// FloorHistory returns canonical collection id's floor history (Version
// 0 and a nil History when none was observed). Errors are Internal
// *readmodel.Error. Safe for concurrent use.
func (s *Store) FloorHistory(ctx context.Context, id string) (render.FloorHistoryView, error) {
	k := string(key(pFloorHistory, id))
	c, gen, ok := s.cache.get(k)
	if ok {
		return c.(render.FloorHistoryView), nil
	}
	b, ok, err := s.get([]byte(k))
	if err != nil || !ok {
		return render.FloorHistoryView{}, err
	}
	h, ver, err := decodeFloorHistory(b)
	if err != nil {
		return render.FloorHistoryView{}, readmodel.Wrap(readmodel.Internal, err, "read floor history")
	}
	v := render.FloorHistoryView{Version: ver, History: h}
	s.cache.put(k, v, gen)
	return v, nil
}
