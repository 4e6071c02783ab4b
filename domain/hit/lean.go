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
	Site, Path, Referer uint32
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
	v1 := len(data) >= len(magicV1) && string(data[:len(magicV1)]) == string(magicV1)
	if !v1 && (len(data) < len(magic) || string(data[:len(magic)]) != string(magic)) {
		return fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	body := data[len(magic):]
	if len(body) > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes, more than a batch holds", ErrCorrupt, len(body))
	}
	dst.Text = unsafe.String(unsafe.SliceData(body), len(body))
	d := leanDecoder{data: body, words: dst.Words}
	var t int64
	var off uint64
	for d.pos < len(d.data) && d.err == nil {
		var h LeanHit
		if v1 {
			t, off = d.varint(), d.uvarint()
		} else {
			t += d.varint()
			off += uint64(d.varint())
		}
		h.Unix, h.Offset = t, off
		if status := d.uvarint(); status > 999 {
			d.fail("status")
		}
		d.uvarint() // bytes
		if v1 {
			h.Site, h.Path = d.literal(d.uvarint()), d.literal(d.uvarint())
			d.literal(d.uvarint()) // method
			h.Referer = d.literal(d.uvarint())
			d.literal(d.uvarint()) // user agent
		} else {
			h.Site, h.Path = d.string(), d.string()
			d.string() // method
			h.Referer = d.string()
			d.string() // user agent
		}
		if d.err != nil {
			dst.Words = d.words
			return fmt.Errorf("%w: hit %d: %v", ErrCorrupt, len(dst.Hits), d.err)
		}
		dst.Hits = append(dst.Hits, h)
	}
	dst.Words = d.words
	return nil
}

// leanDecoder reads a batch as decoder does, keeping strings as Words. The
// version 2 dictionary needs no table of its own: its entries are the
// batch's first maxDict literals, which are Words 0 to maxDict-1.
type leanDecoder struct {
	data  []byte
	pos   int
	words []Word
	err   error
}

func (d *leanDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated or invalid %s", what)
	}
	d.pos = len(d.data)
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
	// One byte, most often: a small status digit, a reference into the
	// dictionary, a short string's length.
	if d.pos < len(d.data) && d.data[d.pos] < 0x80 {
		v := uint64(d.data[d.pos])
		d.pos++
		return v
	}
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
		if n>>1 >= uint64(min(len(d.words), maxDict)) {
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
	d.pos += int(n)
	return id
}
