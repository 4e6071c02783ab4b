package logformat

import (
	"fmt"
	"strings"
)

// builder collects a format's literals and fields into a compiled parser.
type builder struct {
	kind, format string
	lit          []byte // literal since the last field
	head         []byte // literal before the first field
	steps        []step
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
	n := len(b.steps)
	if n == 0 {
		b.head = b.lit
	} else {
		prev := &b.steps[n-1]
		prev.setNext(b.lit)
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
	b.steps = append(b.steps, step{f: f, width: f.width(),
		quoted: len(b.lit) > 0 && b.lit[len(b.lit)-1] == '"'})
	b.tokens = append(b.tokens, token)
	b.seen[f] = true
	b.lit = nil
	return nil
}

// done closes the format and checks that it logs what a page view needs.
func (b *builder) done() (Parser, error) {
	if len(b.steps) == 0 {
		return nil, b.errorf(0, "format", "has no fields")
	}
	last := &b.steps[len(b.steps)-1]
	last.setNext(b.lit)
	for k := range b.steps {
		s := &b.steps[k]
		// A field is quoted only when a quote both opens and closes it.
		s.quoted = s.quoted && s.width == 0 && len(s.next) > 0 && s.next[0] == '"'
		s.op = s.opFor(k == len(b.steps)-1)
	}
	if !b.seen[fTimeLocal] && !b.seen[fTimeISO] && !b.seen[fMsec] {
		return nil, b.errorf(len(b.format), "format", "logs no time")
	}
	if !b.seen[fRequest] && !b.seen[fTarget] {
		return nil, b.errorf(len(b.format), "format", "logs neither the request line nor its path")
	}
	return &compiled{head: b.head, steps: b.steps}, nil
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
		if f == fUser && string(b.lit) == " - " && len(b.steps) > 0 && b.steps[len(b.steps)-1].f == fClient {
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
