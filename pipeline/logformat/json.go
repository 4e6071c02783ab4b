package logformat

import (
	"bytes"
	"fmt"
	"strings"
)

// jsonParser parses lines written by an nginx log_format with
// escape=json: one flat JSON object per line whose values are strings (or
// bare numbers when the template leaves a variable unquoted).
//
// Values are returned still escaped (\" \\ \uXXXX), as Parse returns
// Apache's escapes, so the hot path never copies. Keys are compared as
// written, without unescaping: nginx writes them from the template.
type jsonParser struct {
	keys  keyTable
	times timeCache
}

// compileJSON reads the key of each variable from the nginx template, or
// uses the variables' names as keys for "".
func compileJSON(format string) (Parser, error) {
	if strings.TrimSpace(format) == "" {
		return &jsonParser{keys: newKeyTable(nginxVars)}, nil
	}
	keys, err := jsonTemplate(format)
	if err != nil {
		return nil, err
	}
	var seen [nFields]bool
	for _, f := range keys {
		seen[f] = true
	}
	errorf := func(msg string) error {
		return fmt.Errorf("logformat: json format %q: template at byte %d: %s", format, len(format), msg)
	}
	if !seen[fTimeLocal] && !seen[fTimeISO] && !seen[fMsec] {
		return nil, errorf("no key holds $time_local, $time_iso8601 or $msec alone")
	}
	if !seen[fRequest] && !seen[fTarget] {
		return nil, errorf("no key holds $request, $request_uri or $uri alone")
	}
	return &jsonParser{keys: newKeyTable(keys)}, nil
}

// jsonTemplate maps the keys of a template such as
// {"ip":"$remote_addr","t":"$time_local"} to fields. Keys holding an
// unknown variable or a constant are left out, so their values are
// skipped when parsing.
func jsonTemplate(format string) (map[string]field, error) {
	t := []byte(format)
	errAt := func(pos int, msg string, args ...any) error {
		tok := format[pos:min(pos+20, len(format))]
		return fmt.Errorf("logformat: json format %q: %q at byte %d: %s", format, tok, pos, fmt.Sprintf(msg, args...))
	}
	keys := map[string]field{}
	i := skipSpace(t, 0)
	if i >= len(t) || t[i] != '{' {
		return nil, errAt(i, "a template is one JSON object")
	}
	i = skipSpace(t, i+1)
	if i < len(t) && t[i] == '}' {
		return nil, errAt(i, "the object has no keys")
	}
	for {
		if i >= len(t) || t[i] != '"' {
			return nil, errAt(i, "want a quoted key")
		}
		end := stringEnd(t, i)
		if end < 0 {
			return nil, errAt(i, "key never closes")
		}
		key := format[i+1 : end]
		i = skipSpace(t, end+1)
		if i >= len(t) || t[i] != ':' {
			return nil, errAt(i, "want : after key %q", key)
		}
		i = skipSpace(t, i+1)
		vpos := i
		var val string
		if i < len(t) && t[i] == '"' {
			end = stringEnd(t, i)
			if end < 0 {
				return nil, errAt(i, "value of key %q never closes", key)
			}
			val, i = format[i+1:end], end+1
		} else {
			j := i
			for j < len(t) && t[j] != ',' && t[j] != '}' && !isSpace(t[j]) {
				j++
			}
			val, i = format[i:j], j
		}
		name, alone := soleVar(val)
		if alone {
			if f, ok := nginxVars[name]; ok {
				keys[key] = f
			}
		} else if f := knownVarIn(val); f != "" {
			return nil, errAt(vpos, "key %q mixes %s with other text; give it a key of its own", key, f)
		}
		i = skipSpace(t, i)
		if i < len(t) && t[i] == ',' {
			i = skipSpace(t, i+1)
			continue
		}
		if i < len(t) && t[i] == '}' {
			i++
			break
		}
		return nil, errAt(i, "want , or } after the value of key %q", key)
	}
	if i = skipSpace(t, i); i != len(t) {
		return nil, errAt(i, "text after the object")
	}
	return keys, nil
}

// soleVar returns the variable name when v is exactly "$name" or "${name}".
func soleVar(v string) (string, bool) {
	switch {
	case strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}"):
		v = v[2 : len(v)-1]
	case strings.HasPrefix(v, "$"):
		v = v[1:]
	default:
		return "", false
	}
	if v == "" {
		return "", false
	}
	for k := 0; k < len(v); k++ {
		if !isVarByte(v[k]) {
			return "", false
		}
	}
	return v, true
}

// knownVarIn returns the first variable in v that pagewatch uses, or "".
func knownVarIn(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] != '$' {
			continue
		}
		j := i + 1
		if j < len(v) && v[j] == '{' {
			j++
		}
		k := j
		for k < len(v) && isVarByte(v[k]) {
			k++
		}
		if f, ok := nginxVars[v[j:k]]; ok && f != fSkip {
			return "$" + v[j:k]
		}
	}
	return ""
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace. nginx writes none, so the common case is one compare:
// every whitespace byte is at most ' '.
func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index of the quote closing the JSON string that
// opens at b[start], or -1.
func stringEnd(b []byte, start int) int {
	for i := start + 1; i < len(b); {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		if !escaped(b[start+1 : q]) {
			return q
		}
		i = q + 1
	}
	return -1
}

// skipNested returns the index just past the object or array opening at
// b[start], or -1. Values pagewatch maps are never nested, but a template
// may hold a constant that is.
func skipNested(b []byte, start int) int {
	depth := 0
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return -1
			}
			i = end
		}
	}
	return -1
}

// Parse implements Parser. An empty string value, which nginx writes for
// an unset variable, leaves its field unset; so does null. The time and
// the status are required.
func (p *jsonParser) Parse(line []byte, e *Entry) error {
	*e = Entry{}
	line, err := trimLine(line)
	if err != nil {
		return err
	}
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return fail(ReasonJSON, i)
	}
	i = skipSpace(line, i+1)
	var seen [nFields]bool
	if i < len(line) && line[i] == '}' {
		i++
	} else {
		for {
			if i >= len(line) || line[i] != '"' {
				return fail(ReasonJSON, i)
			}
			f, known, end := p.keys.match(line, i)
			if end < 0 {
				return fail(ReasonQuote, i)
			}
			i = skipSpace(line, end+1)
			if i >= len(line) || line[i] != ':' {
				return fail(ReasonJSON, i)
			}
			i = skipSpace(line, i+1)
			if i >= len(line) {
				return fail(ReasonJSON, i)
			}
			vpos := i
			var v []byte
			switch line[i] {
			case '"':
				end = stringEnd(line, i)
				if end < 0 {
					return fail(ReasonQuote, i)
				}
				v, i = line[i+1:end], end+1
			case '{', '[':
				end = skipNested(line, i)
				if end < 0 {
					return fail(ReasonJSON, i)
				}
				i = end
			default:
				j := i
				for j < len(line) && line[j] != ',' && line[j] != '}' && !isSpace(line[j]) {
					j++
				}
				if j == i {
					return fail(ReasonJSON, i)
				}
				v, i = line[i:j], j
				if string(v) == "null" {
					v = nil
				}
			}
			if known && len(v) > 0 {
				if !store(e, f, v, &p.times) {
					return fail(f.reason(), vpos)
				}
				seen[f] = true
			}
			i = skipSpace(line, i)
			if i < len(line) && line[i] == ',' {
				i = skipSpace(line, i+1)
				continue
			}
			if i < len(line) && line[i] == '}' {
				i++
				break
			}
			return fail(ReasonJSON, i)
		}
	}
	if i = skipSpace(line, i); i != len(line) {
		return fail(ReasonJSON, i)
	}
	if !seen[fTimeLocal] && !seen[fTimeISO] && !seen[fMsec] {
		return fail(ReasonTime, 0)
	}
	if !seen[fStatus] {
		return fail(ReasonStatus, 0)
	}
	return nil
}
