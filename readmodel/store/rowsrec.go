package store

import (
	"encoding/binary"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// A source's listing rows for a collection (a section of its state record,
// state.go) are one binary record (schema 13):
//
//	byte     rowsRecord
//	time     the rows' observation time
//	strings  the reference: the first row's chain, contract address and
//	         collection id
//	uvarint  the number of rows, then each row's fields in the order of
//	         readmodel.ListingRow's Fields, written as a token record's
//	         rows are (tokenrec.go) against the reference
//
// The projector reads a collection's rows whenever it diffs its change
// feed or renders its listings, and decoding them from JSON was the
// largest single read of a replay (2 of 45 CPU-s at 10,000 collections x
// 100 tokens); writing them was most of the inputs' encoding.

// rowsRecord is the first byte of a rows record: neither JSON nor a
// packed input (packedInput) starts with it.
const rowsRecord = 0x02

var errCorruptRows = corruptRecord("listing rows record")

// encodeRows encodes rows observed at observedAt.
func encodeRows(observedAt time.Time, rows []readmodel.ListingRow) []byte {
	return appendRows(make([]byte, 0, 64+96*len(rows)), observedAt, rows)
}

// appendRows appends the rows record of rows observed at observedAt to b.
func appendRows(b []byte, observedAt time.Time, rows []readmodel.ListingRow) []byte {
	var ref readmodel.TokenDoc
	if len(rows) > 0 {
		ref.Chain, ref.ContractAddress, ref.CollectionID = rows[0].Chain, rows[0].ContractAddress, rows[0].CollectionID
	}
	b = append(b, rowsRecord)
	b = appendTime(b, &observedAt)
	b = appendStr(b, string(ref.Chain), "")
	b = appendStr(b, ref.ContractAddress, "")
	b = appendStr(b, ref.CollectionID, "")
	b = binary.AppendUvarint(b, uint64(len(rows)))
	for i := range rows {
		b = appendRow(b, &rows[i], &ref)
	}
	return b
}

// decodeRows decodes a rows record; the rows' strings share one
// allocation.
func decodeRows(raw []byte) (time.Time, []readmodel.ListingRow, error) {
	if len(raw) == 0 || raw[0] != rowsRecord {
		return time.Time{}, nil, errCorruptRows
	}
	var ref readmodel.TokenDoc
	r := &recDecoder{recReader: recReader{s: string(raw[1:])}, doc: &ref}
	var at time.Time
	if t, ok := r.time(); ok {
		at = *t
	} else {
		r.fail()
	}
	ref.Chain = readmodel.Chain(r.str(""))
	ref.ContractAddress = r.str("")
	ref.CollectionID = r.str("")
	var rows []readmodel.ListingRow
	if n := r.uvarint(); n > 0 && !r.bad {
		if n > uint64(len(r.s)-r.i) { // every row takes at least a byte
			return time.Time{}, nil, errCorruptRows
		}
		rows = make([]readmodel.ListingRow, n)
		r.inRow = true
		for i := range rows {
			rows[i].Fields(r)
		}
	}
	if r.bad || r.i != len(r.s) {
		return time.Time{}, nil, errCorruptRows
	}
	return at, rows, nil
}
