package syslog

import (
	"bytes"
	"errors"
	"io"
)

// A TCP stream carries one of the two framings of RFC 6587:
//
//	octet counting:      "LEN SP MSG", LEN in ASCII decimal (rsyslog and
//	                     syslog-ng with RFC 5424 forwarding)
//	non-transparent:     "MSG LF" (classic forwarding); NUL is taken as a
//	                     terminator too, as some senders use it
//
// A syslog message starts with '<', never with a digit, so the first byte
// of a connection tells which one the peer speaks.

var (
	// errTooLong reports a frame over the limit; it has been (or is being)
	// skipped whole and the stream is still in sync.
	errTooLong = errors.New("syslog: frame longer than max_message_bytes")
	// errBadLength reports an octet count that is not one: the frame
	// boundaries are lost, so the connection cannot go on.
	errBadLength = errors.New("syslog: bad octet count")
)

const (
	modeUnknown = iota
	modeOctet
	modeLF
)

const lenPrefix = 11 // the longest octet count accepted (10 digits) and its space

// framer splits a stream into frames. The frames it returns alias its
// buffer and are valid until the next call.
type framer struct {
	r          io.Reader
	max        int
	buf        []byte // buf[start:end] is read but not yet consumed
	start, end int
	scan       int // LF framing: buf[start:scan] holds no terminator
	mode       int
	skip       int64 // octet counting: bytes of a too-long frame still to discard
	skipping   bool  // LF framing: discarding a too-long frame up to its terminator
	err        error // the read error to return once buf is drained
}

func newFramer(r io.Reader, limit int) *framer {
	// Most frames are a few hundred bytes: start small, grow to the limit
	// only for a connection that needs it.
	return &framer{r: r, max: limit, buf: make([]byte, min(4<<10, limit+lenPrefix))}
}

// next returns the next frame. errTooLong is not fatal: call next again.
// Any other error ends the stream; pending then tells whether it cut a
// frame short.
func (f *framer) next() ([]byte, error) {
	if f.mode == modeUnknown {
		for f.start == f.end {
			if err := f.fill(); err != nil {
				return nil, err
			}
		}
		f.mode = modeLF
		if c := f.buf[f.start]; c >= '1' && c <= '9' {
			f.mode = modeOctet
		}
	}
	if f.mode == modeOctet {
		return f.nextOctet()
	}
	return f.nextLF()
}

// pending reports whether the stream holds part of a frame not yet
// returned or counted.
func (f *framer) pending() bool {
	if f.mode == modeOctet {
		return f.skip == 0 && f.end > f.start
	}
	return !f.skipping && f.end > f.start
}

func (f *framer) nextOctet() ([]byte, error) {
	for f.skip > 0 {
		if f.start == f.end {
			f.start, f.end = 0, 0
			if err := f.fill(); err != nil {
				return nil, err
			}
		}
		n := int(min(int64(f.end-f.start), f.skip))
		f.start += n
		f.skip -= int64(n)
	}
	var length int64
	for {
		n, used, ok := scanLength(f.buf[f.start:f.end])
		if !ok {
			return nil, errBadLength
		}
		if used > 0 {
			f.start += used
			length = n
			break
		}
		if err := f.fill(); err != nil {
			return nil, err
		}
	}
	if length > int64(f.max) {
		f.skip = length
		return nil, errTooLong
	}
	for int64(f.end-f.start) < length {
		if err := f.fill(); err != nil {
			return nil, err
		}
	}
	frame := f.buf[f.start : f.start+int(length)]
	f.start += int(length)
	return frame, nil
}

// scanLength reads "LEN SP" at the start of b. used is 0 while b holds too
// little to tell; ok is false when b cannot start with one.
func scanLength(b []byte) (n int64, used int, ok bool) {
	for k, c := range b {
		if c == ' ' && k > 0 {
			return n, k + 1, true
		}
		if !isDigit(c) || (k == 0 && c == '0') || k == lenPrefix-1 {
			return 0, 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return 0, 0, true
}

func (f *framer) nextLF() ([]byte, error) {
	for {
		if i := terminator(f.buf[f.scan:f.end]); i >= 0 {
			j := f.scan + i
			frame := f.buf[f.start:j]
			f.start, f.scan = j+1, j+1
			if f.skipping {
				f.skipping = false
				continue
			}
			if len(frame) == 0 {
				continue // a blank line between frames
			}
			if len(frame) > f.max {
				return nil, errTooLong // arrived whole, in one read
			}
			return frame, nil
		}
		f.scan = f.end
		switch {
		case f.skipping:
			f.start, f.end, f.scan = 0, 0, 0
		case f.end-f.start > f.max:
			// Drop what is held and the rest up to the terminator, as it
			// comes, so one huge frame never holds more than max bytes.
			f.skipping = true
			f.start, f.end, f.scan = 0, 0, 0
			return nil, errTooLong
		}
		if err := f.fill(); err != nil {
			return nil, err
		}
	}
}

// terminator returns the index of the first LF or NUL in b, or -1.
func terminator(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	region := b
	if i >= 0 {
		region = b[:i]
	}
	if j := bytes.IndexByte(region, 0); j >= 0 {
		return j
	}
	return i
}

// fill reads once into the free space after end, first making room by
// moving the unread bytes to the front or by growing the buffer. Callers
// never hold more than max+lenPrefix unread bytes, so room can always be
// made.
func (f *framer) fill() error {
	if f.err != nil {
		return f.err
	}
	if f.end == len(f.buf) {
		switch {
		case f.start > 0:
			n := copy(f.buf, f.buf[f.start:f.end])
			f.scan = max(f.scan-f.start, 0)
			f.start, f.end = 0, n
		case len(f.buf) < f.max+lenPrefix:
			grown := make([]byte, min(2*len(f.buf), f.max+lenPrefix))
			copy(grown, f.buf[:f.end])
			f.buf = grown
		default:
			return io.ErrShortBuffer // cannot happen; better than reading nothing forever
		}
	}
	n, err := f.r.Read(f.buf[f.end:])
	f.end += n
	if err != nil {
		if n > 0 {
			f.err = err
			return nil
		}
		return err
	}
	return nil
}

// unread returns the start of what is buffered and not consumed, to show
// in the log what a bad frame looked like.
func (f *framer) unread() []byte { return f.buf[f.start:min(f.end, f.start+200)] }
