// Package hit defines a page hit, the unit pagewatch counts, and the compact
// binary form in which batches of hits travel through JetStream.
package hit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"time"
	"unsafe"
)

// Hit is one page view taken from one access-log line.
type Hit struct {
	Time    time.Time // second resolution, as access logs have it
	Site    string
	Path    string
	Method  string
	Status  uint16
	Bytes   uint64
	Referer string
	// Class is who sent the hit, as its user agent told the tailer;
	// Uncounted is set when the tailer's settings do not count that
	// class as page views (ingest.tail.pages.count_classes). Such hits
	// travel too, so that a page's share of each class is known; the
	// zero value, a counted hit, is what every hit was before classes.
	Class     Class
	Uncounted bool
	// Client is the hit's client key: a keyed hash of its address and
	// user agent under a salt that changes every UTC day (pipeline/visitor),
	// 0 when the tailer made none. The address and the user agent
	// themselves never leave the tailer.
	Client uint64
	// Offset is the byte offset of the line in its file (or stream).
	// Together with its batch's HitKey it identifies the line for good,
	// which is what makes loading it again idempotent.
	Offset uint64
}

// magic starts every encoded batch; the digit is the format version, so a
// loader meeting a newer tailer's batch fails loudly instead of misreading
// it. Decode reads versions 1 and 2 too, which Encoder wrote before.
var (
	magic   = []byte("PWH3")
	magicV2 = []byte("PWH2")
	magicV1 = []byte("PWH1")
)

// The format, version 3. After the magic, each hit is:
//
//	time    varint, seconds since the previous hit's time (the first: since 1970)
//	offset  varint, bytes since the previous hit's offset (the first: since 0)
//	status  uvarint
//	bytes   uvarint
//	who     one byte: the class in bits 0-2, bit 6 set when a client
//	        key follows, bit 7 set when the hit is not counted
//	client  8 bytes, little-endian, when bit 6 says so
//	site, path, method, referer: each a string
//
// Version 2 was the same without who and client, and with the user
// agent as a fifth string: a tailer now classifies and keys the client
// itself, and the user agent goes no further than its memory. Its hits
// decode as counted (all of them were), of class unknown, with no client key: version 2
// tailers dropped what was not counted.
//
// A string is a uvarint n. Even n is a literal of n/2 bytes, which follow;
// it becomes the next entry of the batch's dictionary while that has fewer
// than maxDict entries. Odd n is the dictionary's entry n/2.
//
// A batch of real traffic repeats most of its strings (its site, its
// pages, a few hundred user agents and referers among thousands of hits),
// so the dictionary makes it a quarter of version 1's size: a quarter of
// the bytes for NATS to copy, hash and write, and for the loader to read.
// Version 1 was the same without the deltas and the dictionary: a string
// was its length and bytes.
const maxDict = 1 << 13

// numStrings is the strings of a version 3 hit; version 2 had one more.
const numStrings = 4

// The bits of a hit's who byte.
const (
	whoClass     = 0x07
	whoClient    = 0x40
	whoUncounted = 0x80
)

// ErrCorrupt is returned by Decode for input that is not a batch. Callers
// branch on it: a corrupt message is dead-lettered, never retried.
var ErrCorrupt = errors.New("corrupt hit batch")

// Encoder appends hits to a batch buffer. The zero value is ready to use.
type Encoder struct {
	buf   []byte
	count int
	// The dictionary: words[i] is where entry i's bytes are in buf, which
	// do not change until Reset; slots is a hash table of the entries by
	// their bytes (entry+1, 0 for none), with linear probing. Neither
	// holds a pointer: no write barrier, nothing for the collector to scan.
	words []word
	slots []uint32
	seed  maphash.Seed
	// last is, per field, the previous hit's entry+1 (0: none).
	last   [numStrings]uint32
	time   int64
	offset uint64
}

type word struct{ at, n uint32 }

// dictSlots is the size of the dictionary's table: twice the most entries
// it holds, so that a lookup seldom probes a second slot.
const dictSlots = 2 * maxDict

// Add appends one hit.
func (e *Encoder) Add(h *Hit) {
	if len(e.buf) == 0 {
		e.Reset()
	}
	t := h.Time.Unix()
	e.buf = binary.AppendVarint(e.buf, t-e.time)
	e.buf = binary.AppendVarint(e.buf, int64(h.Offset-e.offset))
	e.time, e.offset = t, h.Offset
	e.buf = binary.AppendUvarint(e.buf, uint64(h.Status))
	e.buf = binary.AppendUvarint(e.buf, h.Bytes)
	who := byte(h.Class) & whoClass
	if h.Uncounted {
		who |= whoUncounted
	}
	if h.Client != 0 {
		e.buf = append(e.buf, who|whoClient)
		e.buf = binary.LittleEndian.AppendUint64(e.buf, h.Client)
	} else {
		e.buf = append(e.buf, who)
	}
	e.string(0, h.Site)
	e.string(1, h.Path)
	e.string(2, h.Method)
	e.string(3, h.Referer)
	e.count++
}

// string appends s, field f of a hit: a reference to it when the batch
// has it already. A field that repeats the previous hit's (a file's site,
// a client's user agent) is found without hashing it.
func (e *Encoder) string(f int, s string) {
	if r := e.last[f]; r > 0 && e.word(r-1) == s {
		e.buf = binary.AppendUvarint(e.buf, uint64(r-1)<<1|1)
		return
	}
	if e.slots == nil {
		e.slots = make([]uint32, dictSlots)
		e.seed = maphash.MakeSeed()
	}
	i := maphash.String(e.seed, s) & (dictSlots - 1)
	for ; e.slots[i] > 0; i = (i + 1) & (dictSlots - 1) {
		if r := e.slots[i]; e.word(r-1) == s {
			e.buf = binary.AppendUvarint(e.buf, uint64(r-1)<<1|1)
			e.last[f] = r
			return
		}
	}
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s))<<1)
	at := len(e.buf)
	e.buf = append(e.buf, s...)
	e.last[f] = 0
	if len(e.words) < maxDict && len(e.buf) <= math.MaxUint32 {
		e.words = append(e.words, word{at: uint32(at), n: uint32(len(s))})
		e.slots[i] = uint32(len(e.words))
		e.last[f] = e.slots[i]
	}
}

// word is dictionary entry i, aliasing buf.
func (e *Encoder) word(i uint32) string {
	w := e.words[i]
	return unsafe.String(unsafe.SliceData(e.buf[w.at:]), w.n)
}

// Len is the number of hits added since the last Reset.
func (e *Encoder) Len() int { return e.count }

// Size is the encoded size so far, in bytes.
func (e *Encoder) Size() int { return len(e.buf) }

// Bytes returns the encoded batch; an empty batch encodes to the magic alone.
// The slice is valid until the next Add or Reset.
func (e *Encoder) Bytes() []byte {
	if len(e.buf) == 0 {
		e.Reset()
	}
	return e.buf
}

// Reset empties the encoder, keeping its buffer and dictionary's memory.
func (e *Encoder) Reset() {
	e.buf = append(e.buf[:0], magic...)
	e.count = 0
	clear(e.slots)
	e.words = e.words[:0]
	e.last = [numStrings]uint32{}
	e.time, e.offset = 0, 0
}

// Decode appends the hits of an encoded batch to dst.
func Decode(data []byte, dst []Hit) ([]Hit, error) {
	version := batchVersion(data)
	if version == 0 {
		return dst, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	v1 := version == 1
	// One string holds the whole payload and every field is a substring of
	// it: five allocations per hit otherwise dominate a loader's CPU.
	d := decoder{data: data[len(magic):]}
	d.text = string(d.data)
	n := len(dst)
	var t int64
	var off uint64
	for len(d.data) > 0 {
		var h Hit
		if v1 {
			t, off = d.varint(), d.uvarint()
		} else {
			t += d.varint()
			off += uint64(d.varint())
		}
		h.Time = time.Unix(t, 0).UTC()
		h.Offset = off
		status := d.uvarint()
		if status > 999 {
			d.fail("status")
		}
		h.Status = uint16(status)
		h.Bytes = d.uvarint()
		if version == 3 {
			h.Class, h.Uncounted, h.Client = d.who()
		}
		str := d.string
		if v1 {
			str = d.stringV1
		}
		h.Site = str()
		h.Path = str()
		h.Method = str()
		h.Referer = str()
		if version < 3 {
			str() // the user agent
		}
		if d.err != nil {
			return dst, fmt.Errorf("%w: hit %d: %v", ErrCorrupt, len(dst)-n, d.err)
		}
		dst = append(dst, h)
	}
	return dst, nil
}

// batchVersion is the format version of an encoded batch, 0 for none.
func batchVersion(data []byte) int {
	if len(data) < len(magic) {
		return 0
	}
	switch string(data[:len(magic)]) {
	case string(magic):
		return 3
	case string(magicV2):
		return 2
	case string(magicV1):
		return 1
	}
	return 0
}

// who reads a version 3 hit's class, uncounted bit and client key.
func (d *decoder) who() (Class, bool, uint64) {
	if len(d.data) == 0 {
		d.fail("class")
		return 0, false, 0
	}
	b := d.data[0]
	d.data = d.data[1:]
	c := Class(b & whoClass)
	if !c.Valid() || b&^(whoClass|whoClient|whoUncounted) != 0 {
		d.fail("class")
		return 0, false, 0
	}
	var client uint64
	if b&whoClient != 0 {
		if len(d.data) < 8 {
			d.fail("client key")
			return 0, false, 0
		}
		client = binary.LittleEndian.Uint64(d.data)
		d.data = d.data[8:]
	}
	return c, b&whoUncounted != 0, client
}

type decoder struct {
	data []byte
	text string // data as a string; its tail always matches data
	dict []string
	err  error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated or invalid %s", what)
	}
	d.data = nil
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.data)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.data = d.data[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.data)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.data = d.data[n:]
	return v
}

// string reads a version 2 string: a literal, or an entry of the dictionary.
func (d *decoder) string() string {
	n := d.uvarint()
	if n&1 == 1 {
		if n>>1 >= uint64(len(d.dict)) {
			d.fail("string reference")
			return ""
		}
		return d.dict[n>>1]
	}
	s := d.literal(n >> 1)
	if d.err == nil && len(d.dict) < maxDict {
		d.dict = append(d.dict, s)
	}
	return s
}

// stringV1 reads a version 1 string: its length and bytes.
func (d *decoder) stringV1() string { return d.literal(d.uvarint()) }

func (d *decoder) literal(n uint64) string {
	if n > uint64(len(d.data)) {
		d.fail("string")
		return ""
	}
	at := len(d.text) - len(d.data)
	s := d.text[at : at+int(n)]
	d.data = d.data[n:]
	return s
}

// Batch is the hits of one JetStream message, with the keys that make
// loading it twice, or loading the same lines in another message,
// harmless (keys.go).
type Batch struct {
	// Seq is the message's stream sequence: two deliveries of one
	// message share it.
	Seq uint64
	// Key names the message by what it holds (its source and byte
	// range), LineKey the source its hits' offsets count in; both 0
	// means Seq names both, as before deterministic keys (Keys).
	Key, LineKey uint64
	// Again, when not 0, is the message's HeaderAgain: its lines at
	// offsets below it may have been loaded before, from other messages.
	Again uint64
	Hits  []Hit
	// Lean, when not nil, holds the batch's hits instead of Hits, as
	// DecodeLean leaves them: the loader's way, which copies no string.
	Lean *Lean
}

// Len is the number of hits in the batch.
func (b *Batch) Len() int {
	if b.Lean != nil {
		return len(b.Lean.Hits)
	}
	return len(b.Hits)
}

// MsgKey is the key of the batch's per-minute counts.
func (b *Batch) MsgKey() uint64 {
	if b.Key != 0 {
		return b.Key
	}
	return b.Seq
}

// HitKey is the key each hit's Offset counts in: with it, the hit's
// event id.
func (b *Batch) HitKey() uint64 {
	if b.LineKey != 0 {
		return b.LineKey
	}
	return b.Seq
}
