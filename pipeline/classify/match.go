package classify

// matcher finds any of its patterns in a user agent, ignoring ASCII case,
// in one pass: a bit per hashed lowercased trigram says where a pattern
// may start, and only there are patterns compared. A browser's user
// agent rarely hits a bit, so the cost is about a table lookup per byte
// rather than a search per pattern. Patterns are 3 bytes at least.
type matcher struct {
	starts *[1 << 16 / 64]uint64
	pats   []pattern
}

type pattern struct {
	tri   uint32
	p     []byte // lowercased
	index int    // what add was told, returned by match
}

// minPattern is the shortest pattern: the matcher indexes patterns by
// their first three bytes.
const minPattern = 3

func trigram(a, b, c byte) uint32 {
	return (uint32(a)<<16 | uint32(b)<<8 | uint32(c)) * 0x9E3779B1 >> 16
}

// add adds p, at least minPattern bytes, which match reports as index.
func (m *matcher) add(p string, index int) {
	if m.starts == nil {
		m.starts = new([1 << 16 / 64]uint64)
	}
	lp := make([]byte, len(p))
	for i := range len(p) {
		lp[i] = lower[p[i]]
	}
	k := trigram(lp[0], lp[1], lp[2])
	m.starts[k/64] |= 1 << (k % 64)
	m.pats = append(m.pats, pattern{k, lp, index})
}

// match returns the index of the pattern found earliest in ua (of those
// starting there, the first added), or -1.
func (m *matcher) match(ua []byte) int {
	if m.starts == nil {
		return -1
	}
	for i := 0; i+2 < len(ua); i++ {
		k := trigram(lower[ua[i]], lower[ua[i+1]], lower[ua[i+2]])
		if m.starts[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		for _, p := range m.pats {
			if p.tri == k && len(ua)-i >= len(p.p) && foldEqual(ua[i:i+len(p.p)], p.p) {
				return p.index
			}
		}
	}
	return -1
}

// foldEqual reports whether s equals the lowercase p, ignoring ASCII case.
func foldEqual(s, p []byte) bool {
	for i, c := range p {
		if lower[s[i]] != c {
			return false
		}
	}
	return true
}

// lower folds ASCII letters; every other byte is itself.
var lower = func() (t [256]byte) {
	for c := range t {
		t[c] = byte(c)
		if c >= 'A' && c <= 'Z' {
			t[c] = byte(c) + 'a' - 'A'
		}
	}
	return t
}()
