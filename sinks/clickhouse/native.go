package clickhouse

import (
	"context"
	"encoding/binary"
	"sync"
)

// The loader's inserts, when clickhouse.http_addr is set, are encoded
// here in ClickHouse's Native format rather than by the driver's column
// types: those copy every string into a column buffer that grows by
// doubling, then again into the connection's, and were most of the
// loader's CPU. One pass writes each value once into a reused buffer,
// which goes to the server as the body of an HTTP INSERT (httpinsert.go).
// One INSERT is still one block, taken whole or not at all, with the
// same rows in the same order as the driver's batches send.

// block is one Native block without the block info a native-protocol Data
// packet has: the column and row counts, then each column whole, as its
// name, its type and its values. It is the body an HTTP `INSERT ... FORMAT
// Native` takes and the contents of a Native file.
type block struct{ buf []byte }

// start begins the block after whatever b.buf already holds.
func (b *block) start(columns, rows int) {
	b.buf = binary.AppendUvarint(b.buf, uint64(columns))
	b.buf = binary.AppendUvarint(b.buf, uint64(rows))
}

// column starts a column's values.
func (b *block) column(name, typ string) {
	b.str(name)
	b.str(typ)
}

// str is a String value: its length as a varint, then its bytes as they
// are (ClickHouse strings are bytes, not text).
func (b *block) str(s string) {
	b.buf = binary.AppendUvarint(b.buf, uint64(len(s)))
	b.buf = append(b.buf, s...)
}

func (b *block) u64(v uint64) { b.buf = binary.LittleEndian.AppendUint64(b.buf, v) }

// dateTime is a DateTime: seconds since the epoch as a UInt32, which
// covers 1970 to 2106 as the type does.
func (b *block) dateTime(unix int64) { b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(unix)) }

// date is a Date: days since the epoch as a UInt16.
func (b *block) date(unix int64) { b.buf = binary.LittleEndian.AppendUint16(b.buf, uint16(unix/86400)) }

// grow makes room for n more bytes at once, so a large block is not
// copied again and again as it doubles.
func (b *block) grow(n int) {
	if cap(b.buf)-len(b.buf) < n {
		b.buf = append(make([]byte, 0, len(b.buf)+n), b.buf...)
	}
}

// strBytes is what str writes for s.
func strBytes(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// hitsBlock encodes rows, with their pages and referrers, as insertHits
// names their columns.
func hitsBlock(b *block, rows []row, pages []page, refs []string) {
	n := 0
	for _, r := range rows {
		p := &pages[r.page]
		n += strBytes(p.site) + strBytes(p.path) + strBytes(refs[r.ref])
	}
	b.start(6, len(rows))
	b.grow(n + len(rows)*(4+8+8) + 128)
	b.column("ts", "DateTime")
	for _, r := range rows {
		b.dateTime(r.unix)
	}
	b.column("site", "String")
	for _, r := range rows {
		b.str(pages[r.page].site)
	}
	b.column("path", "String")
	for _, r := range rows {
		b.str(pages[r.page].path)
	}
	b.column("referer", "String")
	for _, r := range rows {
		b.str(refs[r.ref])
	}
	b.column("seq", "UInt64")
	for _, r := range rows {
		b.u64(r.seq)
	}
	b.column("line_offset", "UInt64")
	for _, r := range rows {
		b.u64(r.off)
	}
}

// minutesBlock encodes counts, of pages, as insertPageMinutes names their
// columns.
func minutesBlock(b *block, counts []minuteCount, pages []page) {
	b.start(5, len(counts))
	b.column("site", "String")
	for _, k := range counts {
		b.str(pages[k.page].site)
	}
	b.column("path", "String")
	for _, k := range counts {
		b.str(pages[k.page].path)
	}
	b.column("minute", "DateTime")
	for _, k := range counts {
		b.dateTime(k.minute)
	}
	b.column("seq", "UInt64")
	for _, k := range counts {
		b.u64(k.seq)
	}
	b.column("hits", "UInt64")
	for _, k := range counts {
		b.u64(k.hits)
	}
}

// daysBlock encodes rows as insertLoadedDays names their columns.
func daysBlock(b *block, rows []dayBatch) {
	b.start(2, len(rows))
	b.column("day", "Date")
	for _, r := range rows {
		b.date(r.day)
	}
	b.column("seq", "UInt64")
	for _, r := range rows {
		b.u64(r.seq)
	}
}

// blocks reuses encoding buffers across inserts; a loader has a few in
// flight at most.
var blocks = sync.Pool{New: func() any { return new(block) }}

// insertNative inserts the rows encode writes, for insert (an INSERT
// naming its columns), over HTTP.
func (c *Client) insertNative(ctx context.Context, insert string, encode func(*block)) error {
	b := blocks.Get().(*block)
	b.buf = b.buf[:0]
	encode(b)
	if err := c.http.insert(ctx, insert, b.buf); err != nil {
		// Not reused: the HTTP client may still be sending it.
		return err
	}
	blocks.Put(b)
	return nil
}
