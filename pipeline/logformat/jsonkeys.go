package logformat

// keyTable maps the keys of JSON lines to fields. A Go map would hash every
// byte of each key after a search for its closing quote, which together
// were most of the time spent on a JSON line. Instead a key is recognised
// in place, from the four bytes after its opening quote and its length,
// and only a key that is not in the table is searched for its end.
type keyTable struct {
	// slots is an open-addressing hash table of the keys of three bytes or
	// more, by their first four bytes counting the closing quote; it is a
	// power of two long and at most half full.
	slots []keySlot
	shift uint32     // 32 - log2(len(slots))
	short []keyField // keys of up to two bytes, too short for a slot
}

// keySlot holds one key, with what match compares laid out flat in the
// slot: following pointers is what would take the time.
type keySlot struct {
	used       bool
	f          field
	prefix     uint32 // the first four bytes of the key and its quote
	head, tail uint64 // its first and last eight bytes (tail: four when shorter)
	key        string
}

type keyField struct {
	key string
	f   field
}

func newKeyTable(keys map[string]field) keyTable {
	bits := uint32(3)
	for 1<<bits < 2*len(keys) {
		bits++
	}
	t := keyTable{slots: make([]keySlot, 1<<bits), shift: 32 - bits}
	for k, f := range keys {
		if len(k) < 3 {
			t.short = append(t.short, keyField{k, f})
			continue
		}
		s := keySlot{used: true, f: f, prefix: le32([]byte(k + `"`)), key: k}
		switch b := []byte(k); {
		case len(b) > 8:
			s.head, s.tail = le64(b), le64(b[len(b)-8:])
		case len(b) > 3:
			s.tail = uint64(le32(b[len(b)-4:]))
		}
		h := t.hash(s.prefix)
		for t.slots[h].used {
			h = (h + 1) & uint32(len(t.slots)-1)
		}
		t.slots[h] = s
	}
	return t
}

// hash is Fibonacci hashing; masking the shift spares Go its check for
// shifts of 32 bits or more.
func (t *keyTable) hash(p uint32) uint32 { return (p * 0x9e3779b1) >> (t.shift & 31) }

// match reads the key whose opening quote is line[i]. It returns the index
// of its closing quote (-1 if it never closes) and its field, if the key is
// in the table.
func (t *keyTable) match(line []byte, i int) (f field, ok bool, end int) {
	if i+5 <= len(line) {
		p := le32(line[i+1:])
		for h := t.hash(p); t.slots[h].used; h = (h + 1) & uint32(len(t.slots)-1) {
			s := &t.slots[h]
			if s.prefix != p {
				continue
			}
			// A key of the table directly followed by a quote is the
			// whole key: keys come from the template, where they hold no
			// unescaped quote and do not end in an escaping backslash.
			end = i + 1 + len(s.key)
			if end >= len(line) || line[end] != '"' {
				continue
			}
			k := line[i+1 : end]
			switch {
			case len(k) == 3:
				ok = true // the prefix held it and its quote
			case len(k) <= 8:
				ok = le32(k[len(k)-4:]) == uint32(s.tail)
			case len(k) <= 16:
				ok = le64(k) == s.head && le64(k[len(k)-8:]) == s.tail
			default:
				ok = string(k) == s.key
			}
			if ok {
				return s.f, true, end
			}
		}
	}
	end = stringEnd(line, i)
	if end < 0 || end-i-1 >= 3 {
		// A key of three bytes or more that closes leaves the four bytes
		// of its prefix in the line, so the loop above saw it.
		return 0, false, end
	}
	for _, kf := range t.short {
		if kf.key == string(line[i+1:end]) {
			return kf.f, true, end
		}
	}
	return 0, false, end
}
