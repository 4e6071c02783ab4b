package hit

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// Lean is a batch decoded for loading (DecodeLean): of each hit, what the
// hits and page_minutes tables keep — its time, its line offset, and its
// site, path and referrer as ids of the batch's strings — and nothing
// else. It holds no pointers but Text, so neither decoding nor the
// collector touches a string per hit.
type Lean struct {
	// Text is the batch's encoded hits; every string of the batch is a
	// run of its bytes.
	Text string
	// Words are the batch's literal strings in the order they appear in
	// it, a string's id being its index. A string that repeats may have
	// more than one id (past the encoding's dictionary, or in a version 1
	// batch, which has none).
	Words []Word
	Hits  []LeanHit
}

// Word is a string of a Lean batch: Text[At : At+Len].
type Word struct{ At, Len uint32 }

// LeanHit is one hit of a Lean batch. Site, Path and Referer are ids of
// Words.
type LeanHit struct {
	Unix                int64 // seconds since 1970, as Hit.Time
	Offset              uint64
	Client              uint64 // as Hit.Client
	Site, Path, Referer uint32
	Class               Class // as Hit.Class
	Uncounted           bool  // as Hit.Uncounted
}

// Str is the string whose id is id.
func (l *Lean) Str(id uint32) string {
	w := l.Words[id]
	return l.Text[w.At : w.At+w.Len]
}

// DecodeLean decodes a batch into dst, replacing what it held and reusing
// its memory. It accepts exactly the batches Decode accepts, with the same
// hits, minus the fields a loader never writes (method, status, bytes,
// user agent), which it checks and skips.
//
// Unlike Decode it does not copy data: dst.Text aliases it, so data must
// not change while dst is in use. A NATS message's Data qualifies: the
// client allocates it for each message and never writes it again.
func DecodeLean(data []byte, dst *Lean) error {
	dst.Text, dst.Words, dst.Hits = "", dst.Words[:0], dst.Hits[:0]
	version := batchVersion(data)
	if version == 0 {
		return fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	body := data[len(magic):]
	if len(body) > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes, more than a batch holds", ErrCorrupt, len(body))
	}
	dst.Text = unsafe.String(unsafe.SliceData(body), len(body))
	d := leanDecoder{data: body, words: dst.Words}
	var err error
	switch version {
	case 1:
		dst.Hits, err = d.hitsV1(dst.Hits)
	case 2:
		dst.Hits, err = d.hits(dst.Hits, false)
	default:
		dst.Hits, err = d.hits(dst.Hits, true)
	}
	dst.Words = d.words
	return err
}

// hits appends the hits of a version 3 batch (v3) or a version 2 one.
// Most of its values take one or two bytes (a time step of 0, an offset
// step of a line's length, a status, a reference to one of the first
// 8,192 strings), which uv reads inline; the rest go the decoder's way.
func (d *leanDecoder) hits(dst []LeanHit, v3 bool) ([]LeanHit, error) {
	data := d.data
	var t int64
	var off uint64
	var all [numStrings + 1]uint32
	strs := all[:]
	if v3 {
		strs = all[:numStrings]
	}
	for d.pos < len(data) {
		v, p := uv(data, d.pos)
		if p < 0 {
			t += d.varint()
		} else {
			t += int64(v>>1) ^ -int64(v&1)
			d.pos = p
		}
		if v, p = uv(data, d.pos); p < 0 {
			off += uint64(d.varint())
		} else {
			off += uint64(int64(v>>1) ^ -int64(v&1))
			d.pos = p
		}
		if v, p = uv(data, d.pos); p < 0 {
			v = d.uvarint()
		} else {
			d.pos = p
		}
		if v > 999 {
			d.fail("status")
		}
		if _, p = uv(data, d.pos); p < 0 {
			d.uvarint() // bytes
		} else {
			d.pos = p
		}
		var h LeanHit
		if v3 {
			h.Class, h.Uncounted, h.Client = d.who()
		}
		// Site, path, method, referer (and a version 2 user agent).
		for f := range strs {
			if v, p = uv(data, d.pos); p >= 0 && v&1 == 1 && v>>1 < uint64(d.dict) {
				strs[f] = uint32(v >> 1)
				d.pos = p
			} else {
				strs[f] = d.string()
			}
		}
		if d.err != nil {
			return dst, fmt.Errorf("%w: hit %d: %v", ErrCorrupt, len(dst), d.err)
		}
		h.Unix, h.Offset, h.Site, h.Path, h.Referer = t, off, strs[0], strs[1], strs[3]
		dst = append(dst, h)
	}
	return dst, nil
}

// uv reads a uvarint of one or two bytes at p and returns it with the
// position after it, or p < 0 for any other.
func uv(b []byte, p int) (uint64, int) {
	if p+1 < len(b) {
		if b[p] < 0x80 {
			return uint64(b[p]), p + 1
		}
		if b[p+1] < 0x80 {
			return uint64(b[p]&0x7f) | uint64(b[p+1])<<7, p + 2
		}
	}
	return 0, -1
}

// hitsV1 appends the hits of a version 1 batch, which tailers wrote
// before version 2.
func (d *leanDecoder) hitsV1(dst []LeanHit) ([]LeanHit, error) {
	for d.pos < len(d.data) {
		var h LeanHit
		h.Unix, h.Offset = d.varint(), d.uvarint()
		if status := d.uvarint(); status > 999 {
			d.fail("status")
		}
		d.uvarint() // bytes
		h.Site, h.Path = d.literal(d.uvarint()), d.literal(d.uvarint())
		d.literal(d.uvarint()) // method
		h.Referer = d.literal(d.uvarint())
		d.literal(d.uvarint()) // user agent
		if d.err != nil {
			return dst, fmt.Errorf("%w: hit %d: %v", ErrCorrupt, len(dst), d.err)
		}
		dst = append(dst, h)
	}
	return dst, nil
}

// leanDecoder reads a batch as decoder does, keeping strings as Words. The
// version 2 dictionary needs no table of its own: its entries are the
// batch's first maxDict literals, which are Words 0 to maxDict-1.
type leanDecoder struct {
	data  []byte
	pos   int
	words []Word
	dict  uint32 // entries in the dictionary: min(len(words), maxDict)
	err   error
}

func (d *leanDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated or invalid %s", what)
	}
	d.pos = len(d.data)
}

// who reads a version 3 hit's class, uncounted bit and client key.
func (d *leanDecoder) who() (Class, bool, uint64) {
	if d.pos >= len(d.data) {
		d.fail("class")
		return 0, false, 0
	}
	b := d.data[d.pos]
	d.pos++
	c := Class(b & whoClass)
	if !c.Valid() || b&^(whoClass|whoClient|whoUncounted) != 0 {
		d.fail("class")
		return 0, false, 0
	}
	var client uint64
	if b&whoClient != 0 {
		if len(d.data)-d.pos < 8 {
			d.fail("client key")
			return 0, false, 0
		}
		client = binary.LittleEndian.Uint64(d.data[d.pos:])
		d.pos += 8
	}
	return c, b&whoUncounted != 0, client
}

func (d *leanDecoder) varint() int64 {
	v, n := binary.Varint(d.data[d.pos:])
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.pos += n
	return v
}

func (d *leanDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.data[d.pos:])
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.pos += n
	return v
}

// string reads a version 2 string: a literal, or an entry of the
// dictionary.
func (d *leanDecoder) string() uint32 {
	n := d.uvarint()
	if n&1 == 1 {
		if n>>1 >= uint64(d.dict) {
			d.fail("string reference")
			return 0
		}
		return uint32(n >> 1)
	}
	return d.literal(n >> 1)
}

// literal reads a string of n bytes and returns its id.
func (d *leanDecoder) literal(n uint64) uint32 {
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.data)-d.pos) {
		d.fail("string")
		return 0
	}
	id := uint32(len(d.words))
	d.words = append(d.words, Word{At: uint32(d.pos), Len: uint32(n)})
	d.dict = uint32(min(len(d.words), maxDict))
	d.pos += int(n)
	return id
}
