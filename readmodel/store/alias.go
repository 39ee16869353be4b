package store

import (
	"context"

	"github.com/dgraph-io/badger/v4"
	"github.com/marketd/marketd/readmodel"
)

// Aliases: every {id} form of a collection (document id, address, slug)
// under v/a/<form>, resolved to its canonical id with the collision rule
// of docs/api.md. Written from the collection document at save.

// Alias kinds, in collision preference order.
const (
	AliasDocumentID byte = 0
	AliasAddress    byte = 1
	AliasSlug       byte = 2
)

// Alias is one {id} form of a collection. Kind ranks the forms for
// collisions: AliasDocumentID, AliasAddress, AliasSlug.
type Alias struct {
	Key   string
	Kind  byte
	Chain readmodel.Chain
}

func aliasKey(a Alias, cid string) []byte {
	rank := byte(0xff)
	if r := a.Chain.Rank(); r >= 0 {
		rank = byte(r)
	}
	return append(key(pAlias, a.Key, ""), append([]byte{a.Kind, rank}, cid...)...)
}

// SetAliases replaces cid's aliases old by new.
func (t *Tx) SetAliases(cid string, old, new []Alias) {
	for _, a := range old {
		t.del(aliasKey(a, cid))
	}
	for _, a := range new {
		if a.Key == "" || len(a.Key) > readmodel.MaxIDLen {
			continue
		}
		t.set(aliasKey(a, cid), plain(nil))
	}
	t.aliases = true
}

// ResolveCollection maps any {id} form (document id, contract address or
// collection mint, slug) to the canonical document id: the exact key first,
// then its lowercase form. When one alias names several collections the
// choice is deterministic: a document id beats an address beats a slug;
// then the chain earlier in readmodel.Chains; then the smaller id. It
// returns NotFound for an empty, over-long (> readmodel.MaxIDLen) or unknown id.
func (s *Store) ResolveCollection(ctx context.Context, id string) (string, error) {
	if id == "" || len(id) > readmodel.MaxIDLen {
		return "", notFound("collection")
	}
	cid, gen, ok := s.cache.getResolve(id)
	if ok {
		if cid == "" {
			return "", notFound("collection")
		}
		return cid, nil
	}
	cid, err := s.resolve(id, false)
	if err != nil {
		return "", err
	}
	if cid == "" {
		if low := lower(id); low != id {
			if cid, err = s.resolve(low, true); err != nil {
				return "", err
			}
		}
	}
	s.cache.putResolve(id, cid, gen)
	if cid == "" {
		return "", notFound("collection")
	}
	return cid, nil
}

// resolve returns the best collection under alias. A folded (lowercased)
// lookup never matches a Solana mint: mints are case-sensitive.
func (s *Store) resolve(alias string, folded bool) (string, error) {
	prefix := key(pAlias, alias, "")
	solana := byte(readmodel.Solana.Rank())
	var cid string
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			k := it.Item().Key()
			if len(k) < len(prefix)+2 {
				continue
			}
			if folded && k[len(prefix)] == AliasAddress && k[len(prefix)+1] == solana {
				continue
			}
			cid = string(k[len(prefix)+2:])
			return nil
		}
		return nil
	})
	return cid, internal(err, "resolve collection")
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
