package httpapi

import (
	"hash/maphash"
	"time"

	"github.com/gofiber/fiber/v2"
)

// identity is what one response depends on, declared once by the handler
// that builds it: the route, the request's values that choose what is
// shown (an id, a position, a limit), the views read and their versions,
// what was resolved from them for this request (an asOf, how many listings
// expired) and the times at which the clock alone changes the answer. The
// response's ETag (Server.tagOf), its page memo key (key) and how long a
// memo may keep it (until) are all derived from it, so they cannot
// disagree: a declared value is in the tag and the key alike.
//
// Values are appended to one byte string after the route's kind, each
// width- or length-delimited so that no two declarations share it; the
// ETag is a per-process seeded hash of that string. The add methods return
// the identity, as append does: id = id.str(cv.ID).version(cv.Version).
type identity struct {
	key memoKey
	// until is when the clock alone changes the answer (unix
	// nanoseconds): a listing or cursor that expires, a fallback that
	// takes over, a next cursor minted a minute later; 0: never.
	until int64
	// untagged: a view without a version, or an item that is an error,
	// went into the body; it gets no ETag and no memo keeps it.
	untagged bool
}

// Kinds of identities beyond the cursor kinds (listings, sales,
// collections, events), which name their routes' identities too.
const (
	identDetail cursorKind = 'D'
	identFloor  cursorKind = 'F'
	identToken  cursorKind = 'K'
	identTokens cursorKind = 'T' // the batch GET /v1/tokens
)

// newIdentity starts the identity of a response of route kind k in buf
// (a caller's stack buffer; a longer identity grows onto the heap).
func newIdentity(buf []byte, k cursorKind) identity {
	return identity{key: newMemoKey(buf, k)}
}

// str declares a text the body depends on: a canonical id, a store
// position, a query value.
func (id identity) str(s string) identity {
	id.key = id.key.str(s)
	return id
}

// num declares a number the body depends on: a limit, an offset, a USD
// quote's version, a resolved asOf, a count.
func (id identity) num(v uint64) identity {
	id.key = id.key.num(v)
	return id
}

// flag declares a yes or no the body depends on (a fallback served).
func (id identity) flag(b bool) identity {
	if b {
		return id.num(1)
	}
	return id.num(0)
}

// version declares the version of a view the body was built from; version
// 0 (unknown) leaves the response without an ETag, and no memo keeps it.
func (id identity) version(v uint64) identity {
	if v == 0 {
		id.untagged = true
	}
	return id.num(v)
}

// unversioned says the body holds something without a version (an error
// item of the batch): no ETag, and no memo keeps it.
func (id identity) unversioned() identity {
	id.untagged = true
	return id
}

// expires declares that the answer changes by the clock alone at t (unix
// nanoseconds; 0: no bound): a memo keeps the response only until then.
// What it changes to must be told apart by a declared value (a listing
// that expires is counted in the listings' identity, a fallback is a
// flag) or be the same but for a next cursor's expiry (mintsCursor),
// which the weak ETag leaves out.
func (id identity) expires(t int64) identity {
	id.until = earliest(id.until, t)
	return id
}

// mintsCursor declares that the body carries a next cursor minted at now:
// its expiry moves to the next minute at mintedUntil, which bounds the
// memos. The ETag stays (the cursor resumes at the same position).
func (s *Server) mintsCursor(id identity, now time.Time) identity {
	return id.expires(s.cursors.mintedUntil(now))
}

// guarded is the key of a memo consulted before the views are read: the
// identity as declared so far, which must name everything the request
// chooses, then v, a version that moves whenever any view the response
// will read changes (TokensVersioner). It is written to buf, or with buf
// nil in place after id's bytes, where the next declaration overwrites it.
func (id identity) guarded(buf []byte, v uint64) memoKey {
	if buf == nil {
		return id.key.num(v)
	}
	return memoKey(append(buf[:0], id.key...)).num(v)
}

// tagOf is the ETag of a response of identity id: a hash of everything it
// declares, seeded per Server (view versions are node-local: two nodes,
// or one before and after a restart, never tag different bodies alike; at
// worst a revalidation against another node is a 200). None when id is
// untagged.
func (s *Server) tagOf(id identity) etag {
	if id.untagged {
		return etag{}
	}
	return etag{h: maphash.Bytes(s.etagSeed, id.key), valid: true}
}

// pageFromMemo makes the page memo's body for key the response's body when
// it holds one good at now, and reports whether it did. Otherwise the
// caller builds the body and offers it with rememberPage and the returned
// hash.
func (s *Server) pageFromMemo(c *fiber.Ctx, key memoKey, now time.Time) (h uint64, hit bool) {
	if s.memo == nil {
		return 0, false
	}
	e, h := s.memo.lookup(key, now.UnixNano())
	if e == nil {
		return h, false
	}
	c.Response().SetBodyRaw(e.body)
	return h, true
}

// rememberPage offers the body just built for id to the page memo under
// key (id.key, or its guarded key; h from pageFromMemo), with id's ETag,
// good until id's bound. The memo keeps a body whole: one with the
// request's time in it (timeAt, as for keep) is good only within its
// millisecond. An untagged response is not offered.
func (s *Server) rememberPage(c *fiber.Ctx, key memoKey, h uint64, id identity, timeAt []int, now time.Time) {
	if s.memo == nil || id.untagged {
		return
	}
	until := id.until
	if len(timeAt) > 0 {
		until = earliest(until, (now.UnixMilli()+1)*int64(time.Millisecond))
	}
	s.memo.keep(key, h, memoEntry{body: c.Response().Body(), tag: s.tagOf(id).h, expires: until})
}
