package source

import (
	"bytes"

	gojson "github.com/goccy/go-json"
)

// scanLazyPage reads a grouped page the way DecodeLazyGrouped's decoders
// do (encoding/json into Page[lazyGroup]), without copying: each group's
// Rows is the slice of body that holds its value. It handles only the
// plain form, which is what well-behaved upstreams send, and reports
// ok=false for anything else, which the decoders then read as before:
//   - body must be valid JSON, its top level an object;
//   - keys and the string values read (collectionId, nextCursor,
//     watermark) must be printable ASCII without escapes;
//   - a key that differs from a field's name only by case, or a field
//     given twice, is left to encoding/json's rules for them;
//   - a field of the wrong type is left to encoding/json's error.
//
// Unknown keys are skipped. So when ok, the result is what encoding/json
// would give, apart from where Rows points (FuzzLazyGroups compares them).
func scanLazyPage(body []byte) (p Page[lazyGroup], ok bool) {
	if !gojson.Valid(body) {
		return p, false
	}
	s := scanner{b: body}
	s.space()
	if !s.is('{') {
		return p, false
	}
	var seen [4]bool
	ok = s.object(func(key []byte) bool {
		f, known := field(key, "items", "nextCursor", "hasMore", "watermark")
		if !known {
			return f < 0 && s.skip()
		}
		if seen[f] {
			return false
		}
		seen[f] = true
		switch f {
		case 0:
			return s.groups(&p.Items)
		case 1:
			return s.plainString(&p.NextCursor)
		case 2:
			return s.boolean()
		default:
			return s.plainString(&p.Watermark)
		}
	})
	return p, ok
}

// scanner walks a document gojson.Valid accepted, so it checks only what
// tells the plain form from the rest; b[i] is the next byte to read.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) is(c byte) bool { return s.i < len(s.b) && s.b[s.i] == c }

// object reads the object at b[i], calling member with each key and b[i]
// at its value; member reads the value and reports whether to go on.
func (s *scanner) object(member func(key []byte) bool) bool {
	s.i++ // {
	s.space()
	if s.is('}') {
		s.i++
		return true
	}
	for {
		key, ok := s.plain()
		if !ok {
			return false
		}
		s.space()
		s.i++ // :
		s.space()
		if !member(key) {
			return false
		}
		s.space()
		if s.is('}') {
			s.i++
			return true
		}
		s.i++ // ,
		s.space()
	}
}

// groups reads the items array (or null) into items.
func (s *scanner) groups(items *[]lazyGroup) bool {
	if s.null() {
		*items = nil
		return true
	}
	if !s.is('[') {
		return false
	}
	s.i++
	s.space()
	out := []lazyGroup{}
	if s.is(']') {
		s.i++
		*items = out
		return true
	}
	for {
		var g lazyGroup
		switch {
		case s.null():
		case s.is('{'):
			var seen [2]bool
			if !s.object(func(key []byte) bool {
				f, known := field(key, "collectionId", "rows")
				if !known {
					return f < 0 && s.skip()
				}
				if seen[f] {
					return false
				}
				seen[f] = true
				if f == 0 {
					return s.plainString(&g.CollectionID)
				}
				start := s.i
				if !s.skip() {
					return false
				}
				g.Rows = s.b[start:s.i:s.i]
				return true
			}) {
				return false
			}
		default:
			return false
		}
		out = append(out, g)
		s.space()
		if s.is(']') {
			s.i++
			*items = out
			return true
		}
		s.i++ // ,
		s.space()
	}
}

// field finds key among names: its index and true, or -1 and false when
// no name matches it even ignoring case, or the index of the name it
// matches only ignoring case and false (encoding/json would take it for
// that field).
func field(key []byte, names ...string) (int, bool) {
	for i, n := range names {
		if string(key) == n {
			return i, true
		}
	}
	for i, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return i, false
		}
	}
	return -1, false
}

// plain reads the string at b[i] and returns its bytes when they are
// printable ASCII without escapes.
func (s *scanner) plain() ([]byte, bool) {
	if !s.is('"') {
		return nil, false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := s.b[s.i+1 : j]
			s.i = j + 1
			return v, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// plainString reads a plain string, or null (which leaves v as it is, as
// encoding/json does), into v.
func (s *scanner) plainString(v *string) bool {
	if s.null() {
		return true
	}
	b, ok := s.plain()
	if ok {
		*v = string(b)
	}
	return ok
}

// boolean reads true, false or null.
func (s *scanner) boolean() bool {
	if s.null() {
		return true
	}
	for _, lit := range []string{"true", "false"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return true
		}
	}
	return false
}

// null reads null if it is next.
func (s *scanner) null() bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// skip reads one value of a valid document, whatever it is.
func (s *scanner) skip() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	default: // a number or a literal
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return true
			}
			s.i++
		}
		return true
	}
}

// skipString reads the string at b[i], escapes included.
func (s *scanner) skipString() bool {
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return true
		}
	}
	return false
}
