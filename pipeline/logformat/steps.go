package logformat

import "bytes"

// op is how a step finds the end of its field. Compile picks it once from
// the step's shape, so that Parse takes one switch per field rather than
// re-deciding from width, quotes and literal on every line.
type op uint8

const (
	opLit       op = iota // ends at the first occurrence of its literal
	opSpace               // its literal is one space: ends at the first space
	opHost                // a host or address, ending where its literal starts with a byte no host has
	opFixed               // fixed width, then its literal
	opQuoted              // ends at an unescaped quote that starts its literal
	opQuotedEnd           // opQuoted for the last field, which may lack its closing quote
	opEnd                 // the last field, unquoted and with no literal: ends at a space or the end
)

// step takes one field from a line, then matches the literal after it.
type step struct {
	f     field
	op    op
	width int    // the field's fixed length, or 0 when it ends at next
	next  []byte // literal after the field; empty only after the last field or a fixed-width one
	// quoted fields sit between quotes: they end at an unescaped quote
	// (Apache writes \"), and the last one may lack its closing quote.
	quoted bool
	// word holds next when it fits in eight bytes, so that hasNext
	// compares it in one go: mask keeps its bytes of a loaded word.
	word, mask uint64
}

// setNext sets s.next and its word.
func (s *step) setNext(next []byte) {
	s.next, s.word, s.mask = next, 0, 0
	if len(next) <= 8 {
		var b [8]byte
		copy(b[:], next)
		s.word = le64(b[:])
		s.mask = 1<<(8*uint(len(next))) - 1 // all ones for eight bytes
	}
}

// hasNext reports whether line[q:] starts with s.next. Literals are a few
// bytes long and tested once or twice per field, where loading eight bytes
// at once beats a loop; near the end of the line it falls back to one.
func (s *step) hasNext(line []byte, q int) bool {
	if q+8 <= len(line) && len(s.next) <= 8 {
		return le64(line[q:])&s.mask == s.word
	}
	return hasLit(line[q:], s.next)
}

// opFor picks s's op once its literal and quoting are known.
func (s *step) opFor(last bool) op {
	switch {
	case s.width > 0:
		return opFixed
	case s.quoted && last:
		return opQuotedEnd
	case s.quoted:
		return opQuoted
	case len(s.next) == 0:
		return opEnd
	case (s.f == fClient || s.f == fVhost) && !isHostByte(s.next[0]):
		return opHost
	case len(s.next) == 1 && s.next[0] == ' ':
		return opSpace
	}
	return opLit
}

// compiled is a Parser made from a format string by Compile.
type compiled struct {
	head  []byte // literal before the first field
	steps []step
	times timeCache
}

// Parse implements Parser. Like Parse, it ignores whatever follows the
// format after a space, so fields appended to a format later still parse.
func (c *compiled) Parse(line []byte, e *Entry) error {
	*e = Entry{}
	line, err := trimLine(line)
	if err != nil {
		return err
	}
	if !hasLit(line, c.head) {
		return fail(c.steps[0].f.reason(), 0)
	}
	i := len(c.head)
	for k := range c.steps {
		s := &c.steps[k]
		var end int
		switch s.op {
		case opSpace:
			end = indexByteFrom(line, i, ' ')
			if end < 0 {
				return fail(s.f.reason(), i)
			}
		case opHost:
			// One pass both finds the end and checks the host: the
			// first byte that cannot be in a host must start the
			// literal, which then is the first one in the line, as
			// opLit would find it; any other means a bad value.
			end = i
			for end < len(line) && isHostByte(line[end]) {
				end++
			}
			if end == i || !s.hasNext(line, end) {
				return fail(s.f.reason(), i)
			}
		case opFixed:
			end = i + s.width
			if end > len(line) || !s.hasNext(line, end) {
				return fail(s.f.reason(), i)
			}
		case opQuoted:
			end = closeQuote(line, i, s, false)
			if end < 0 {
				return fail(ReasonQuote, i-1)
			}
		case opQuotedEnd:
			end = closeQuote(line, i, s, true)
			if end < 0 {
				// Truncated lines (a full disk, a log rotated mid-write)
				// lose the closing quote of the last field; the rest is
				// still worth counting.
				if !store(e, s.f, line[i:], &c.times) {
					return fail(s.f.reason(), i)
				}
				return nil
			}
		case opEnd:
			j := bytes.IndexByte(line[i:], ' ')
			if j < 0 {
				j = len(line) - i
			}
			end = i + j
		default:
			end = indexLit(line, i, s)
			if end < 0 {
				return fail(s.f.reason(), i)
			}
		}
		// This is store, written out: a call per field would spill and
		// reload the loop's state around it, which costs more than most
		// fields' own work. TestStoreMatchesParse keeps the two alike.
		v := line[i:end]
		switch s.f {
		case fClient, fVhost:
			if s.op != opHost && !isHost(v) {
				return fail(s.f.reason(), i)
			}
			if s.f == fClient {
				e.Client = v
			} else {
				e.Vhost = v
			}
		case fIdent:
			if len(v) == 0 {
				return fail(ReasonIdent, i)
			}
			e.Ident = v
		case fUser:
			if len(v) == 0 {
				return fail(ReasonUser, i)
			}
			e.User = v
		case fTimeLocal:
			t, ok := c.times.parse(v)
			if !ok {
				return fail(ReasonTime, i)
			}
			e.Time = t
		case fRequest:
			e.Request = v
			splitRequest(e)
		case fMethod:
			e.Method = v
		case fTarget:
			e.Target = v
		case fProto:
			e.Proto = v
		case fStatus:
			st, ok := parseStatus(v)
			if !ok {
				return fail(ReasonStatus, i)
			}
			e.Status = st
		case fBytes:
			n, ok := parseBytes(v)
			if !ok {
				return fail(ReasonBytes, i)
			}
			e.Bytes = n
		case fReferer:
			e.Referer = v
		case fUserAgent:
			e.UserAgent = v
		case fTimeISO, fMsec:
			if !store(e, s.f, v, &c.times) {
				return fail(ReasonTime, i)
			}
		}
		i = end + len(s.next)
	}
	if i < len(line) && line[i] != ' ' {
		return fail(c.steps[len(c.steps)-1].f.reason(), i)
	}
	return nil
}

// indexLit returns the index of the first s.next in line at or after i, or
// -1. The separators of log formats are a few bytes long and usually near,
// where IndexByte and a compare beat bytes.Index's general search.
func indexLit(line []byte, i int, s *step) int {
	c := s.next[0]
	for i < len(line) {
		i = indexByteFrom(line, i, c)
		if i < 0 {
			return -1
		}
		if s.hasNext(line, i) {
			return i
		}
		i++
	}
	return -1
}

// indexByteFrom returns the index of the first c in line at or after i, or
// -1. Most fields that end at a space or a short literal are a few bytes
// long ("-", a size, an address), where a loop finds the end in fewer
// cycles than bytes.IndexByte takes to set up its vector search; longer
// ones go on with it.
func indexByteFrom(line []byte, i int, c byte) int {
	for n := min(len(line), i+16); i < n; i++ {
		if line[i] == c {
			return i
		}
	}
	if i < len(line) {
		if j := bytes.IndexByte(line[i:], c); j >= 0 {
			return i + j
		}
	}
	return -1
}

// hasLit is bytes.HasPrefix for the short literals of log formats, where
// a plain loop beats the call to the general compare.
func hasLit(b, lit []byte) bool {
	if len(b) < len(lit) {
		return false
	}
	for k, c := range lit {
		if b[k] != c {
			return false
		}
	}
	return true
}

// closeQuote returns the index of the quote that closes the field starting
// at start: the first one not escaped by a backslash where the line goes on
// with next (which starts with that quote). For the last field (tail) the
// literal must also be followed by the end of the line or a space, as
// quoteEnd requires. It returns -1 when there is none.
func closeQuote(line []byte, start int, s *step, tail bool) int {
	for i := start; i < len(line); {
		j := bytes.IndexByte(line[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		if s.hasNext(line, q) && !escaped(line[start:q]) {
			after := q + len(s.next)
			if !tail || after == len(line) || line[after] == ' ' {
				return q
			}
		}
		i = q + 1
	}
	return -1
}
