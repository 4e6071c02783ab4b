// Package hit defines a page hit, the unit pagewatch counts, and the compact
// binary form in which batches of hits travel through JetStream.
package hit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Hit is one page view taken from one access-log line.
type Hit struct {
	Time      time.Time // second resolution, as access logs have it
	Site      string
	Path      string
	Method    string
	Status    uint16
	Bytes     uint64
	Referer   string
	UserAgent string
	// Offset is the byte offset of the line in its file. Together with the
	// JetStream sequence of the batch it identifies the line for good,
	// which is what makes re-loading a batch idempotent.
	Offset uint64
}

// magic starts every encoded batch; the digit is the format version, so a
// loader meeting a newer tailer's batch fails loudly instead of misreading it.
var magic = []byte("PWH1")

// ErrCorrupt is returned by Decode for input that is not a batch. Callers
// branch on it: a corrupt message is dead-lettered, never retried.
var ErrCorrupt = errors.New("corrupt hit batch")

// Encoder appends hits to a batch buffer. The zero value is ready to use.
type Encoder struct {
	buf   []byte
	count int
}

// Add appends one hit.
func (e *Encoder) Add(h *Hit) {
	if e.buf == nil {
		e.buf = append(e.buf, magic...)
	}
	e.buf = binary.AppendVarint(e.buf, h.Time.Unix())
	e.buf = binary.AppendUvarint(e.buf, h.Offset)
	e.buf = binary.AppendUvarint(e.buf, uint64(h.Status))
	e.buf = binary.AppendUvarint(e.buf, h.Bytes)
	for _, s := range [...]string{h.Site, h.Path, h.Method, h.Referer, h.UserAgent} {
		e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
		e.buf = append(e.buf, s...)
	}
	e.count++
}

// Len is the number of hits added since the last Reset.
func (e *Encoder) Len() int { return e.count }

// Size is the encoded size so far, in bytes.
func (e *Encoder) Size() int { return len(e.buf) }

// Bytes returns the encoded batch; an empty batch encodes to the magic alone.
// The slice is valid until the next Add or Reset.
func (e *Encoder) Bytes() []byte {
	if e.buf == nil {
		e.buf = append(e.buf, magic...)
	}
	return e.buf
}

// Reset empties the encoder, keeping its buffer.
func (e *Encoder) Reset() {
	e.buf = e.buf[:0]
	e.buf = append(e.buf, magic...)
	e.count = 0
}

// Decode appends the hits of an encoded batch to dst.
func Decode(data []byte, dst []Hit) ([]Hit, error) {
	if len(data) < len(magic) || string(data[:len(magic)]) != string(magic) {
		return dst, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	// One string holds the whole payload and every field is a substring of
	// it: five allocations per hit otherwise dominate a loader's CPU.
	d := decoder{data: data[len(magic):]}
	d.text = string(d.data)
	for len(d.data) > 0 {
		var h Hit
		h.Time = time.Unix(d.varint(), 0).UTC()
		h.Offset = d.uvarint()
		status := d.uvarint()
		if status > 999 {
			d.fail("status")
		}
		h.Status = uint16(status)
		h.Bytes = d.uvarint()
		h.Site = d.string()
		h.Path = d.string()
		h.Method = d.string()
		h.Referer = d.string()
		h.UserAgent = d.string()
		if d.err != nil {
			return dst, fmt.Errorf("%w: hit %d: %v", ErrCorrupt, len(dst), d.err)
		}
		dst = append(dst, h)
	}
	return dst, nil
}

type decoder struct {
	data []byte
	text string // data as a string; its tail always matches data
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

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.data)) {
		d.fail("string")
		return ""
	}
	at := len(d.text) - len(d.data)
	s := d.text[at : at+int(n)]
	d.data = d.data[n:]
	return s
}

// Batch is the hits of one JetStream message, with the message's stream
// sequence: the identity that makes loading it twice harmless.
type Batch struct {
	Seq  uint64
	Hits []Hit
}
