package clickhouse

import (
	"context"
	"encoding/binary"
	"math"
)

// The loader's inserts, when clickhouse.http_addr is set, are encoded
// here in ClickHouse's Native format rather than by the driver's column
// types: those copy every string into a column buffer that grows by
// doubling, then again into the connection's, and were most of the
// loader's CPU. One pass writes each value once into a reused buffer of
// about 1 MiB, which goes to the server, compressed or not, whenever it
// is full, as the body of an HTTP INSERT streams (httpinsert.go). One
// INSERT is still one block, taken whole or not at all, with the same
// rows in the same order as the driver's batches send.

// A block is one Native block without the block info a native-protocol
// Data packet has: the column and row counts, then each column whole, as
// its name, its type and its values. It is the body an HTTP `INSERT ...
// FORMAT Native` takes and the contents of a Native file. The encoders
// append to a local slice rather than a field: a store of the slice into
// the heap on every value costs a write barrier while the collector runs.

// appendStart begins a block.
func appendStart(buf []byte, columns, rows int) []byte {
	buf = binary.AppendUvarint(buf, uint64(columns))
	return binary.AppendUvarint(buf, uint64(rows))
}

// appendColumn starts a column's values.
func appendColumn(buf []byte, name, typ string) []byte {
	return appendStr(appendStr(buf, name), typ)
}

// appendStr appends a String value: its length as a varint, then its
// bytes as they are (ClickHouse strings are bytes, not text).
func appendStr(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

// appendDateTime appends a DateTime: seconds since the epoch as a
// UInt32, which covers 1970 to 2106 as the type does.
func appendDateTime(buf []byte, unix int64) []byte {
	return binary.LittleEndian.AppendUint32(buf, uint32(unix))
}

// appendDate appends a Date: days since the epoch as a UInt16.
func appendDate(buf []byte, unix int64) []byte {
	return binary.LittleEndian.AppendUint16(buf, uint16(unix/86400))
}

// grow makes room for n more bytes at once, so a large block is not
// copied again and again as it doubles.
func grow(buf []byte, n int) []byte {
	if cap(buf)-len(buf) < n {
		buf = append(make([]byte, 0, len(buf)+n), buf...)
	}
	return buf
}

// strBytes is what appendStr appends for s.
func strBytes(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// A stream takes a block in pieces as it is encoded, so that an insert
// never holds it whole: the encoders hand their buffer to flush whenever
// it holds limit bytes or more, and carry on with what flush returns.
type stream struct {
	limit int
	flush func([]byte) []byte
}

// whole is the stream that keeps a block whole in its buffer.
var whole = &stream{limit: math.MaxInt}

// appendHits appends rows, with their pages and referrers, as insertHits
// names their columns.
func appendHits(buf []byte, rows []row, pages []page, refs []string) []byte {
	return streamHits(buf, whole, rows, pages, refs)
}

// streamHits is appendHits passing the block on to s as it grows.
func streamHits(buf []byte, s *stream, rows []row, pages []page, refs []string) []byte {
	limit := s.limit
	n := 0
	if limit == math.MaxInt {
		for _, r := range rows {
			p := &pages[r.page]
			n += strBytes(p.site) + strBytes(p.path) + strBytes(refs[r.ref])
		}
		n += len(rows) * (4 + 8 + 8)
	}
	buf = appendStart(buf, 6, len(rows))
	buf = grow(buf, min(n, limit)+128)
	buf = appendColumn(buf, "ts", "DateTime")
	for _, r := range rows {
		buf = appendDateTime(buf, r.unix)
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	buf = appendColumn(buf, "site", "String")
	for _, r := range rows {
		buf = appendStr(buf, pages[r.page].site)
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	buf = appendColumn(buf, "path", "String")
	for _, r := range rows {
		buf = appendStr(buf, pages[r.page].path)
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	buf = appendColumn(buf, "referer", "String")
	for _, r := range rows {
		buf = appendStr(buf, refs[r.ref])
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	buf = appendColumn(buf, "seq", "UInt64")
	for _, r := range rows {
		buf = binary.LittleEndian.AppendUint64(buf, r.seq)
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	buf = appendColumn(buf, "line_offset", "UInt64")
	for _, r := range rows {
		buf = binary.LittleEndian.AppendUint64(buf, r.off)
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	return buf
}

// appendMinutes appends counts, of pages, as insertPageMinutes names
// their columns.
func appendMinutes(buf []byte, counts []minuteCount, pages []page) []byte {
	return streamMinutes(buf, whole, counts, pages)
}

// streamMinutes is appendMinutes passing the block on to s as it grows.
func streamMinutes(buf []byte, s *stream, counts []minuteCount, pages []page) []byte {
	limit := s.limit
	buf = appendStart(buf, 5, len(counts))
	buf = appendColumn(buf, "site", "String")
	for _, k := range counts {
		buf = appendStr(buf, pages[k.page].site)
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	buf = appendColumn(buf, "path", "String")
	for _, k := range counts {
		buf = appendStr(buf, pages[k.page].path)
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	buf = appendColumn(buf, "minute", "DateTime")
	for _, k := range counts {
		buf = appendDateTime(buf, k.minute)
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	buf = appendColumn(buf, "seq", "UInt64")
	for _, k := range counts {
		buf = binary.LittleEndian.AppendUint64(buf, k.seq)
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	buf = appendColumn(buf, "hits", "UInt64")
	for _, k := range counts {
		buf = binary.LittleEndian.AppendUint64(buf, k.hits)
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	return buf
}

// appendDays appends rows as insertLoadedDays names their columns.
func appendDays(buf []byte, rows []dayBatch) []byte {
	buf = appendStart(buf, 2, len(rows))
	buf = appendColumn(buf, "day", "Date")
	for _, r := range rows {
		buf = appendDate(buf, r.day)
	}
	buf = appendColumn(buf, "seq", "UInt64")
	for _, r := range rows {
		buf = binary.LittleEndian.AppendUint64(buf, r.seq)
	}
	return buf
}

// insertNative inserts the block encode appends, for insert (an INSERT
// naming its columns), over HTTP.
func (c *Client) insertNative(ctx context.Context, insert string, encode func([]byte) []byte) error {
	return c.http.insert(ctx, insert, func(buf []byte, _ *stream) []byte { return encode(buf) })
}

// insertStream inserts the block encode streams, for insert, over HTTP:
// the block goes out a frame at a time as it is encoded.
func (c *Client) insertStream(ctx context.Context, insert string, encode func([]byte, *stream) []byte) error {
	return c.http.insert(ctx, insert, encode)
}
