package store

import (
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// engine is the ordered key-value store under a Store's transactions:
// Badger on disk (a node, a replay's build) or a B-tree in memory
// (memkv.go: tests and builds that write their result in one pass). The
// projector's transactions (Tx) reach their keys only through it, so the
// same apply, codecs and views run over both.
type engine interface {
	// begin starts a transaction; a read-only one sees what was
	// committed when it began, a read-write one also its own writes.
	begin(update bool) kvTxn
}

// kvTxn is one transaction of an engine. Not safe for concurrent use.
type kvTxn interface {
	// get returns a copy of k's value; ok is false when k is absent.
	get(k []byte) (v []byte, ok bool, err error)
	set(k, v []byte) error
	// setTTL sets k to v until ttl from now.
	setTTL(k, v []byte, ttl time.Duration) error
	del(k []byte) error
	// scan calls fn with each key that starts with prefix, from seek on
	// (nil: the prefix's first), in key order, and its value when values
	// is true (nil otherwise). The slices are valid only during the call.
	// fn returns false to stop the walk; its error stops it too and is
	// scan's.
	scan(prefix, seek []byte, values bool, fn func(k, v []byte) (bool, error)) error
	// commit makes the writes visible; after it (or discard) the
	// transaction is done. Commit of a read-only transaction is an error.
	commit() error
	// discard ends the transaction, dropping its writes when it did not
	// commit. Safe to call after commit.
	discard()
}

// badgerEngine is an engine over a Badger database.
type badgerEngine struct{ db *badger.DB }

func (e badgerEngine) begin(update bool) kvTxn { return badgerTxn{e.db.NewTransaction(update)} }

type badgerTxn struct{ txn *badger.Txn }

func (b badgerTxn) get(k []byte) ([]byte, bool, error) { return txnGet(b.txn, k) }
func (b badgerTxn) set(k, v []byte) error              { return b.txn.Set(k, v) }
func (b badgerTxn) setTTL(k, v []byte, ttl time.Duration) error {
	return b.txn.SetEntry(badger.NewEntry(k, v).WithTTL(ttl))
}
func (b badgerTxn) del(k []byte) error { return b.txn.Delete(k) }
func (b badgerTxn) commit() error      { return b.txn.Commit() }
func (b badgerTxn) discard()           { b.txn.Discard() }

func (b badgerTxn) scan(prefix, seek []byte, values bool, fn func(k, v []byte) (bool, error)) error {
	it := b.txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: values, PrefetchSize: 64})
	defer it.Close()
	if seek == nil {
		seek = prefix
	}
	for it.Seek(seek); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		if !values {
			if more, err := fn(item.Key(), nil); err != nil || !more {
				return err
			}
			continue
		}
		more := true
		var ferr error
		if err := item.Value(func(v []byte) error {
			more, ferr = fn(item.Key(), v)
			return nil
		}); err != nil {
			return err
		}
		if ferr != nil || !more {
			return ferr
		}
	}
	return nil
}

// txnGet returns a copy of the value of k in txn; ok is false when k is
// absent.
func txnGet(txn *badger.Txn, k []byte) ([]byte, bool, error) {
	it, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := it.ValueCopy(nil)
	return v, err == nil, err
}
