package syslog

// parse5424 parses what follows "<PRI>1 ":
//
//	TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP SD [SP MSG]
//
// where any header field may be the NILVALUE "-", and SD is "-" or one or
// more [id name="value" ...] elements.
func (p *Parser) parse5424(b []byte, i int, m *Message) error {
	end := tokenEnd(b, i)
	switch {
	case end == i+1 && b[i] == '-':
	default:
		t, ok := parseRFC3339(b[i:end])
		if !ok {
			return fail(ReasonTimestamp, i)
		}
		m.Timestamp = t
	}
	i = end
	fields := [...]struct {
		reason string
		max    int
	}{{ReasonHostname, 255}, {ReasonAppName, maxTagLen}, {ReasonProcID, 128}, {ReasonMsgID, 32}}
	for k, f := range fields {
		if i >= len(b) || b[i] != ' ' {
			return fail(f.reason, i)
		}
		i++
		end := tokenEnd(b, i)
		v := b[i:end]
		if len(v) == 0 || len(v) > f.max || !printable(v) {
			return fail(f.reason, i)
		}
		if len(v) == 1 && v[0] == '-' {
			v = nil
		}
		switch k {
		case 0:
			m.Hostname = p.intern(v)
		case 1:
			m.AppName = p.intern(v)
		}
		i = end
	}
	if i >= len(b) || b[i] != ' ' {
		return fail(ReasonStructuredData, i)
	}
	i, ok := skipSD(b, i+1)
	if !ok {
		return fail(ReasonStructuredData, i)
	}
	if i == len(b) {
		m.Content = b[i:]
		return nil
	}
	if b[i] != ' ' {
		return fail(ReasonStructuredData, i)
	}
	i++
	if len(b)-i >= 3 && b[i] == 0xEF && b[i+1] == 0xBB && b[i+2] == 0xBF {
		i += 3
	}
	m.Content = b[i:]
	return nil
}

// skipSD returns the end of the STRUCTURED-DATA starting at i, or where it
// went wrong. Values are skipped, not unescaped: pagewatch does not use
// them, and within quotes a backslash only ever escapes the next byte
// (\" \\ \] are escapes, other pairs are literal), so skipping byte pairs
// finds the closing quote either way.
func skipSD(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	if b[i] == '-' {
		return i + 1, true
	}
	if b[i] != '[' {
		return i, false
	}
	for i < len(b) && b[i] == '[' {
		n := sdName(b[i+1:])
		if n == 0 {
			return i + 1, false
		}
		i += 1 + n
		for {
			if i >= len(b) {
				return i, false
			}
			if b[i] == ']' {
				i++
				break
			}
			if b[i] != ' ' {
				return i, false
			}
			i++
			n := sdName(b[i:])
			if n == 0 {
				return i, false
			}
			i += n
			if len(b)-i < 2 || b[i] != '=' || b[i+1] != '"' {
				return i, false
			}
			i += 2
			for {
				if i >= len(b) {
					return len(b), false
				}
				c := b[i]
				if c == '"' {
					i++
					break
				}
				if c == '\\' {
					i++
				}
				i++
			}
		}
	}
	return i, true
}

// sdName returns the length of the SD-NAME at the start of b: 1..32
// PRINTUSASCII bytes other than '=', ' ', ']' and '"'; 0 if there is none
// or it is longer.
func sdName(b []byte) int {
	n := 0
	for n < len(b) {
		c := b[n]
		if c < 33 || c > 126 || c == '=' || c == ']' || c == '"' {
			break
		}
		n++
		if n > 32 {
			return 0
		}
	}
	return n
}
