package logformat

import (
	"bytes"
	"fmt"
	"strings"
)

// step takes one field from a line, then matches the literal after it.
type step struct {
	f     field
	width int    // the field's fixed length, or 0 when it ends at next
	next  []byte // literal after the field; empty only after the last field or a fixed-width one
	// quoted fields sit between quotes: they end at an unescaped quote
	// (Apache writes \"), and the last one may lack its closing quote.
	quoted bool
}

// compiled is a Parser made from a format string by Compile.
type compiled struct {
	head  []byte // literal before the first field
	steps []step
}

// Parse implements Parser. Like Parse, it ignores whatever follows the
// format after a space, so fields appended to a format later still parse.
func (c *compiled) Parse(line []byte, e *Entry) error {
	*e = Entry{}
	line, err := trimLine(line)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, c.head) {
		return fail(c.steps[0].f.reason(), 0)
	}
	i := len(c.head)
	for k := range c.steps {
		s := &c.steps[k]
		last := k == len(c.steps)-1
		var end int
		switch {
		case s.width > 0:
			end = i + s.width
			if end > len(line) || !hasLit(line[end:], s.next) {
				return fail(s.f.reason(), i)
			}
		case s.quoted:
			end = closeQuote(line, i, s.next, last)
			if end < 0 {
				if !last {
					return fail(ReasonQuote, i-1)
				}
				// Truncated lines (a full disk, a log rotated mid-write)
				// lose the closing quote of the last field; the rest is
				// still worth counting.
				if !store(e, s.f, line[i:]) {
					return fail(s.f.reason(), i)
				}
				return nil
			}
		case len(s.next) == 0:
			// The last field, unquoted: it ends at a space or the end.
			j := bytes.IndexByte(line[i:], ' ')
			if j < 0 {
				j = len(line) - i
			}
			end = i + j
		default:
			end = indexLit(line, i, s.next)
			if end < 0 {
				return fail(s.f.reason(), i)
			}
		}
		if !store(e, s.f, line[i:end]) {
			return fail(s.f.reason(), i)
		}
		i = end + len(s.next)
	}
	if i < len(line) && line[i] != ' ' {
		return fail(c.steps[len(c.steps)-1].f.reason(), i)
	}
	return nil
}

// indexLit returns the index of the first next in line at or after i, or
// -1. The separators of log formats are a few bytes long and usually near,
// where IndexByte and a compare beat bytes.Index's general search.
func indexLit(line []byte, i int, next []byte) int {
	c := next[0]
	for i < len(line) {
		j := bytes.IndexByte(line[i:], c)
		if j < 0 {
			return -1
		}
		i += j
		if hasLit(line[i:], next) {
			return i
		}
		i++
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
func closeQuote(line []byte, start int, next []byte, tail bool) int {
	for i := start; i < len(line); {
		j := bytes.IndexByte(line[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		if hasLit(line[q:], next) && !escaped(line[start:q]) {
			after := q + len(next)
			if !tail || after == len(line) || line[after] == ' ' {
				return q
			}
		}
		i = q + 1
	}
	return -1
}

// builder collects a format's literals and fields into a compiled parser.
type builder struct {
	kind, format string
	lit          []byte // literal since the last field
	c            compiled
	tokens       []string // each step's token, for error messages
	seen         [nFields]bool
}

func (b *builder) errorf(pos int, token, msg string, args ...any) error {
	return fmt.Errorf("logformat: %s format %q: %q at byte %d: %s", b.kind, b.format, token, pos, fmt.Sprintf(msg, args...))
}

// literal appends unescaped literal text. Server configurations escape
// quotes and backslashes inside the format (Apache's \"%r\"), so those
// escapes are undone; the server itself writes them unescaped.
func (b *builder) literal(s string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
			i++
		}
		b.lit = append(b.lit, s[i])
	}
}

// field appends a field taken from the token at pos.
func (b *builder) field(f field, token string, pos int) error {
	n := len(b.c.steps)
	if n == 0 {
		b.c.head = b.lit
	} else {
		prev := &b.c.steps[n-1]
		prev.next = b.lit
		if len(b.lit) == 0 && prev.width == 0 {
			// $uri$is_args$args and %U%q: the target spans its query.
			if prev.f == fTarget && f == fQuery {
				b.lit = nil
				return nil
			}
			return b.errorf(pos, token, "follows %s with nothing between them, so a line cannot be split there", b.tokens[n-1])
		}
	}
	if f == fQuery {
		return b.errorf(pos, token, "a query string is only understood right after the path")
	}
	b.c.steps = append(b.c.steps, step{f: f, width: f.width(),
		quoted: len(b.lit) > 0 && b.lit[len(b.lit)-1] == '"'})
	b.tokens = append(b.tokens, token)
	b.seen[f] = true
	b.lit = nil
	return nil
}

// done closes the format and checks that it logs what a page view needs.
func (b *builder) done() (Parser, error) {
	if len(b.c.steps) == 0 {
		return nil, b.errorf(0, "format", "has no fields")
	}
	last := &b.c.steps[len(b.c.steps)-1]
	last.next = b.lit
	for k := range b.c.steps {
		s := &b.c.steps[k]
		// A field is quoted only when a quote both opens and closes it.
		s.quoted = s.quoted && s.width == 0 && len(s.next) > 0 && s.next[0] == '"'
	}
	if !b.seen[fTimeLocal] && !b.seen[fTimeISO] && !b.seen[fMsec] {
		return nil, b.errorf(len(b.format), "format", "logs no time")
	}
	if !b.seen[fRequest] && !b.seen[fTarget] {
		return nil, b.errorf(len(b.format), "format", "logs neither the request line nor its path")
	}
	c := b.c
	return &c, nil
}

// compileNginx compiles an nginx log_format string: $variables and ${var}
// between literals.
func compileNginx(format string) (Parser, error) {
	b := &builder{kind: KindNginx, format: format}
	for i := 0; i < len(format); {
		k := strings.IndexByte(format[i:], '$')
		if k < 0 {
			b.literal(format[i:])
			break
		}
		b.literal(format[i : i+k])
		i += k
		start := i
		var name string
		if strings.HasPrefix(format[i:], "${") {
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				return nil, b.errorf(start, "${", "no closing }")
			}
			name = format[i+2 : i+end]
			i += end + 1
		} else {
			j := i + 1
			for j < len(format) && isVarByte(format[j]) {
				j++
			}
			name = format[i+1 : j]
			i = j
		}
		if name == "" || strings.IndexFunc(name, func(r rune) bool { return r > 0x7f || !isVarByte(byte(r)) }) >= 0 {
			return nil, b.errorf(start, format[start:i], "not a variable name")
		}
		f := nginxVars[name]
		if f == fUser && string(b.lit) == " - " && len(b.c.steps) > 0 && b.c.steps[len(b.c.steps)-1].f == fClient {
			// nginx writes a constant "-" where Apache logs the identd
			// user (%l). Taking it as the ident, as Parse does, gives
			// both the same Entry for the same line.
			b.lit = b.lit[:1]
			if err := b.field(fIdent, "-", start-2); err != nil {
				return nil, err
			}
			b.lit = append(b.lit, ' ')
		}
		if err := b.field(f, "$"+name, start); err != nil {
			return nil, err
		}
	}
	return b.done()
}

func isVarByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// compileApache compiles an Apache LogFormat string: %directives, with
// optional status conditions (%!200,304{Referer}i), < or > and {argument}.
func compileApache(format string) (Parser, error) {
	b := &builder{kind: KindApache, format: format}
	for i := 0; i < len(format); {
		k := strings.IndexByte(format[i:], '%')
		if k < 0 {
			b.literal(format[i:])
			break
		}
		b.literal(format[i : i+k])
		i += k
		start := i
		i++
		for i < len(format) && strings.IndexByte("!<>,0123456789", format[i]) >= 0 {
			i++
		}
		var arg string
		if i < len(format) && format[i] == '{' {
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				return nil, b.errorf(start, format[start:], "no closing }")
			}
			arg = format[i+1 : i+end]
			i += end + 1
		}
		if i >= len(format) {
			return nil, b.errorf(start, format[start:], "directive letter missing")
		}
		d := format[i]
		i++
		if d == '^' { // %{VARNAME}^ti, ^to: trailers
			if i+2 > len(format) || (format[i:i+2] != "ti" && format[i:i+2] != "to") {
				return nil, b.errorf(start, format[start:min(i+2, len(format))], "unknown directive")
			}
			i += 2
		}
		token := format[start:i]
		var f field
		switch d {
		case '%':
			b.literal("%")
			continue
		case 'h', 'a':
			f = fClient
		case 'l':
			f = fIdent
		case 'u':
			f = fUser
		case 't':
			switch arg {
			case "":
				// %t writes its own brackets.
				b.literal("[")
				if err := b.field(fTimeLocal, token, start); err != nil {
					return nil, err
				}
				b.literal("]")
				continue
			case "sec":
				f = fMsec
			default:
				return nil, b.errorf(start, token, "only %%t and %%{sec}t times are understood")
			}
		case 'r':
			f = fRequest
		case 'm':
			f = fMethod
		case 'U':
			f = fTarget
		case 'q':
			f = fQuery
		case 'H':
			f = fProto
		case 's':
			f = fStatus
		case 'b', 'B', 'O':
			f = fBytes
		case 'v', 'V':
			f = fVhost
		case 'i':
			if arg == "" {
				return nil, b.errorf(start, token, "%%i needs a header name, as in %%{Referer}i")
			}
			switch strings.ToLower(arg) {
			case "referer":
				f = fReferer
			case "user-agent":
				f = fUserAgent
			case "host":
				f = fVhost
			}
		case 'A', 'C', 'D', 'e', 'f', 'I', 'k', 'L', 'n', 'o', 'p', 'P', 'R', 'S', 'T', 'X', '^':
			f = fSkip
		default:
			return nil, b.errorf(start, token, "unknown directive")
		}
		if err := b.field(f, token, start); err != nil {
			return nil, err
		}
	}
	return b.done()
}
