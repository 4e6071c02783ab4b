package pageview

import (
	"bytes"
	"slices"
	"unicode/utf8"
)

// Byte classes of RFC 3986.
var (
	// unreserved: ALPHA DIGIT - . _ ~ — the only bytes whose %XX is decoded
	// (RFC 3986 6.2.2.2); decoding any other would change the URI.
	unreserved [256]bool
	// pathOK: what a path holds unencoded (pchar and "/"). Every other
	// byte, controls and non-ASCII included, is written as %XX.
	pathOK [256]bool
	// queryOK: what a query parameter holds unencoded; "&" never reaches
	// it (parameters are split on it) and "=" is allowed in values.
	queryOK [256]bool
	lower   [256]byte

	// Bytes appendComponent copies as they are: allowed, not '%', and
	// not an upper-case letter when lowercasing.
	pathPlain, pathPlainLower, queryPlain [256]bool
)

const upperHex = "0123456789ABCDEF"

func init() {
	for c := 0; c < 256; c++ {
		lower[c] = byte(c)
		if c >= 'A' && c <= 'Z' {
			lower[c] = byte(c) + 'a' - 'A'
		}
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			unreserved[c] = true
		}
	}
	for c := range 256 {
		pathOK[c] = unreserved[c]
	}
	for _, c := range "!$&'()*+,;=:@/" {
		pathOK[c] = true
	}
	queryOK = pathOK
	queryOK['?'] = true
	for c := range 256 {
		pathPlain[c] = pathOK[c] && c != '%'
		pathPlainLower[c] = pathPlain[c] && lower[c] == byte(c)
		queryPlain[c] = queryOK[c] && c != '%'
	}
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// appendComponent appends src to dst with its percent-encoding normalised:
// %XX of an unreserved byte decoded, the hex of every other escape upper
// case, a '%' that starts no escape left as it is, and every byte outside
// the component's set (controls, space, quotes, non-ASCII) encoded. The
// result is therefore printable ASCII, so always valid UTF-8.
func appendComponent(dst, src []byte, lowercase, query bool) []byte {
	ok, plain := &pathOK, &pathPlain
	switch {
	case query:
		ok, plain = &queryOK, &queryPlain
	case lowercase:
		plain = &pathPlainLower
	}
	stray := -1 // index in dst of the last '%' that starts no escape
	for i := 0; i < len(src); i++ {
		// Most bytes of most paths need nothing: copy them in runs.
		j := i
		for j < len(src) && plain[src[j]] {
			j++
		}
		dst = append(dst, src[i:j]...)
		if i = j; i == len(src) {
			break
		}
		c := src[i]
		if c == '%' {
			if i+2 >= len(src) || !isHex(src[i+1]) || !isHex(src[i+2]) {
				stray = len(dst)
				dst = append(dst, '%')
				continue
			}
			v := unhex(src[i+1])<<4 | unhex(src[i+2])
			i += 2
			// A decoded hex digit right after a stray '%' (or '%' and one
			// digit) would complete an escape that the next pass decodes:
			// "%%61b" must not become "%ab". Keeping it encoded keeps
			// normalising idempotent.
			if unreserved[v] && !(stray >= 0 && isHex(v) && (len(dst)-stray == 1 || len(dst)-stray == 2 && isHex(dst[len(dst)-1]))) {
				if lowercase {
					v = lower[v]
				}
				dst = append(dst, v)
			} else {
				dst = append(dst, '%', upperHex[v>>4], upperHex[v&15])
			}
			continue
		}
		if !ok[c] {
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
			continue
		}
		if lowercase {
			c = lower[c]
		}
		dst = append(dst, c)
	}
	return dst
}

// mergeSlashes makes each run of slashes one, in place, as nginx
// (merge_slashes, on by default) and Apache serve them: /a//b is /a/b.
func mergeSlashes(p []byte) []byte {
	if !bytes.Contains(p, []byte("//")) {
		return p
	}
	out := p[:0]
	for i, c := range p {
		if c == '/' && i > 0 && p[i-1] == '/' {
			continue
		}
		out = append(out, c)
	}
	return out
}

// dropSessionIDs removes ;jsessionid=... path parameters (a Java
// servlet's session, in the URL when cookies are off), in place: the
// same page for every visitor, where it was a page per session.
func dropSessionIDs(p []byte) []byte {
	const param = ";jsessionid="
	for {
		i := indexFold(p, param)
		if i < 0 {
			return p
		}
		end := i + len(param)
		for end < len(p) && p[end] != '/' && p[end] != ';' {
			end++
		}
		p = append(p[:i], p[end:]...)
	}
}

// indexFold is the index of ASCII lower-case sub in p, p's case folded.
func indexFold(p []byte, sub string) int {
	for i := 0; i+len(sub) <= len(p); i++ {
		if hasPrefixFold(p[i:], sub) {
			return i
		}
	}
	return -1
}

// removeDots removes "." and ".." segments in place (RFC 3986 5.2.4), as
// servers do before mapping a path: /a/./b and /a/x/../b are /a/b.
// p starts with '/'.
func removeDots(p []byte) []byte {
	if !bytes.Contains(p, []byte("/.")) {
		return p
	}
	w := 0
	for i := 0; i < len(p); {
		j := i + 1
		for j < len(p) && p[j] != '/' {
			j++
		}
		seg := p[i+1 : j]
		last := j == len(p)
		switch {
		case len(seg) == 1 && seg[0] == '.':
			if last {
				p[w] = '/'
				w++
			}
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			w = max(bytes.LastIndexByte(p[:w], '/'), 0)
			if last {
				p[w] = '/'
				w++
			}
		default:
			w += copy(p[w:], p[i:j])
		}
		i = j
	}
	if w == 0 {
		p[0] = '/'
		w = 1
	}
	return p[:w]
}

// unescapeLog undoes the escapes web servers write in quoted log fields:
// Apache's \" \\ \xHH, nginx's \xHH and JSON's \" \\ \/ \n \uXXXX ...
// A request target never holds a raw backslash (servers log one as an
// escape), so every backslash starts one; an unknown one is kept.
func unescapeLog(dst, src []byte) []byte {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '\\' || i+1 == len(src) {
			dst = append(dst, c)
			continue
		}
		switch e := src[i+1]; e {
		case 'x':
			if i+3 < len(src) && isHex(src[i+2]) && isHex(src[i+3]) {
				dst = append(dst, unhex(src[i+2])<<4|unhex(src[i+3]))
				i += 3
				continue
			}
		case 'u':
			if i+5 < len(src) && isHex(src[i+2]) && isHex(src[i+3]) && isHex(src[i+4]) && isHex(src[i+5]) {
				r := rune(unhex(src[i+2]))<<12 | rune(unhex(src[i+3]))<<8 | rune(unhex(src[i+4]))<<4 | rune(unhex(src[i+5]))
				if r < 0x100 {
					dst = append(dst, byte(r)) // a byte, as nginx means it
				} else {
					dst = utf8.AppendRune(dst, r)
				}
				i += 5
				continue
			}
		case '"', '\\', '/':
			dst = append(dst, e)
			i++
			continue
		case 'n', 'r', 't', 'b', 'f':
			dst = append(dst, jsonControl[e])
			i++
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

var jsonControl = [256]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'f': '\f'}

func hasPrefixFold(s []byte, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lower[s[i]] != prefix[i] {
			return false
		}
	}
	return true
}

// span is one kept query parameter in a scratch buffer; name is its
// length up to '='.
type span struct{ at, n, name int }

// appendPage appends the page of a request target to dst: its path, then
// the kept query parameters. pathEnd is where the path ends in the
// result. ok is false for targets that are no path: "*" (OPTIONS), an
// authority (CONNECT), junk.
func (n *Normalizer) appendPage(dst, target []byte) (out []byte, pathEnd int, ok bool) {
	if bytes.IndexByte(target, '\\') >= 0 {
		var scratch [256]byte
		target = unescapeLog(scratch[:0], target)
	}
	start := len(dst)
	if hasPrefixFold(target, "http://") || hasPrefixFold(target, "https://") {
		// Absolute form, as sent to proxies: the host is the site's
		// business, the page is the path.
		rest := target[bytes.IndexByte(target, ':')+3:]
		i := bytes.IndexAny(rest, "/?#")
		if i < 0 {
			i = len(rest)
		}
		target = rest[i:]
		if len(target) == 0 || target[0] != '/' {
			dst = append(dst, '/')
		}
	} else if len(target) == 0 || target[0] != '/' {
		return dst, 0, false
	}
	if i := bytes.IndexByte(target, '#'); i >= 0 {
		target = target[:i] // never sent by browsers; junk when logged
	}
	var query []byte
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		target, query = target[:i], target[i+1:]
	}
	dst = appendComponent(dst, target, n.lowercase, false)
	dst = dst[:start+len(n.tidy(dst[start:]))]
	if len(dst)-start > n.maxBytes {
		cut := n.maxBytes
		// Never split an escape: "%4" is a different (invalid) path.
		if dst[start+cut-1] == '%' {
			cut--
		} else if dst[start+cut-2] == '%' {
			cut -= 2
		}
		// Cutting can leave a dot segment or a trailing slash; tidy again
		// so the result is what normalising it would give.
		dst = dst[:start+len(n.tidy(dst[start:start+cut]))]
	}
	pathEnd = len(dst)
	if len(query) > 0 && len(n.keep) > 0 {
		dst = n.appendQuery(dst, start, query)
	}
	return dst, pathEnd - start, true
}

// tidy drops a servlet's session id, merges runs of slashes, removes
// dot segments and, with trailing_slash: strip, trailing slashes. All
// work in place and return a prefix of p.
func (n *Normalizer) tidy(p []byte) []byte {
	p = removeDots(mergeSlashes(dropSessionIDs(p)))
	if n.strip {
		for len(p) > 1 && p[len(p)-1] == '/' {
			p = p[:len(p)-1]
		}
	}
	return p
}

// appendQuery appends "?" and the kept parameters of query, sorted by
// name then value, as many whole ones as fit in max_path_bytes.
func (n *Normalizer) appendQuery(dst []byte, start int, query []byte) []byte {
	var scratch [256]byte
	var spansBuf [16]span
	buf, spans := scratch[:0], spansBuf[:0]
	for len(query) > 0 {
		param := query
		if i := bytes.IndexByte(query, '&'); i >= 0 {
			param, query = query[:i], query[i+1:]
		} else {
			query = nil
		}
		if len(param) == 0 {
			continue
		}
		at := len(buf)
		buf = appendComponent(buf, param, false, true)
		p := buf[at:]
		name := bytes.IndexByte(p, '=')
		if name < 0 {
			name = len(p)
		}
		if !n.keeps(p[:name]) {
			buf = buf[:at]
			continue
		}
		spans = append(spans, span{at: at, n: len(p), name: name})
	}
	if len(spans) == 0 {
		return dst
	}
	slices.SortFunc(spans, func(a, b span) int {
		if c := bytes.Compare(buf[a.at:a.at+a.name], buf[b.at:b.at+b.name]); c != 0 {
			return c
		}
		return bytes.Compare(buf[a.at+a.name:a.at+a.n], buf[b.at+b.name:b.at+b.n])
	})
	sep := byte('?')
	for _, s := range spans {
		if len(dst)-start+1+s.n > n.maxBytes {
			break
		}
		dst = append(dst, sep)
		dst = append(dst, buf[s.at:s.at+s.n]...)
		sep = '&'
	}
	return dst
}

func (n *Normalizer) keeps(name []byte) bool {
	for _, k := range n.keep {
		if string(name) == k {
			return true
		}
	}
	return false
}
