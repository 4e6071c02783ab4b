package clickhouse

import (
	"cmp"
	"context"
	"encoding/binary"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
)

// clientCount is one page_clients row.
type clientCount struct {
	day     int32  // as in row: the partition
	page    uint32 // as in row
	class   hit.Class
	counted bool
	minute  int64
	seq     uint64 // the message's MsgKey, as page_minutes.seq
	client  uint64
	hits    uint64
}

// countedRows is the rows that are page views, in their order: rows
// itself when every one is (the usual), else a copy from free that the
// caller puts back.
func countedRows(free *freeList[[]row], rows []row) ([]row, *[]row) {
	i := slices.IndexFunc(rows, func(r row) bool { return !r.counted })
	if i < 0 {
		return rows, nil
	}
	p := getRows(free, len(rows))
	*p = append(*p, rows[:i]...)
	for _, r := range rows[i+1:] {
		if r.counted {
			*p = append(*p, r)
		}
	}
	return *p, p
}

// countClients counts hits per (page, minute, message, class, counted,
// client) from rows as sortedRows leaves them, in page_clients' order
// within each day, in a slice from free.
func countClients(free *freeList[[]clientCount], rows []row) []clientCount {
	out := (*free.get())[:0]
	for i := 0; i < len(rows); {
		first := len(out)
		page, minute := rows[i].page, rows[i].unix/60*60
		for ; i < len(rows) && rows[i].unix/60*60 == minute && rows[i].page == page; i++ {
			r := &rows[i]
			out = append(out, clientCount{day: r.day, page: page, minute: minute, seq: r.msg, class: r.class, counted: r.counted, client: r.client, hits: 1})
		}
		run := out[first:]
		slices.SortFunc(run, cmpClient)
		// Merge equal keys in place.
		n := 0
		for j := range run {
			if n > 0 && cmpClient(run[n-1], run[j]) == 0 {
				run[n-1].hits++
				continue
			}
			run[n] = run[j]
			n++
		}
		out = out[:first+n]
	}
	return out
}

// cmpClient orders a page-minute's counts by page_clients' key.
func cmpClient(a, b clientCount) int {
	if c := cmp.Compare(a.seq, b.seq); c != 0 {
		return c
	}
	if c := cmp.Compare(a.class, b.class); c != 0 {
		return c
	}
	if c := cmp.Compare(b2u(a.counted), b2u(b.counted)); c != 0 {
		return c
	}
	return cmp.Compare(a.client, b.client)
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (h Hits) insertClients(ctx context.Context, counts []clientCount, pages []page) error {
	if h.c.http != nil {
		return h.c.insertStream(ctx, insertPageClients, func(b []byte, s *stream) []byte { return streamClients(b, s, counts, pages) })
	}
	return h.c.sendColumns(ctx, insertPageClients, clientColumns(counts, pages)...)
}

// clientColumns are counts as the driver takes them, in
// insertPageClients' order.
func clientColumns(counts []clientCount, pages []page) []any {
	n := len(counts)
	site, path := make([]string, n), make([]string, n)
	minute := make([]time.Time, n)
	seq, client, hits := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	class, counted := make([]uint8, n), make([]uint8, n)
	for i, k := range counts {
		site[i], path[i], minute[i] = pages[k.page].site, pages[k.page].path, time.Unix(k.minute, 0).UTC()
		seq[i], class[i], counted[i], client[i], hits[i] = k.seq, uint8(k.class), b2u(k.counted), k.client, k.hits
	}
	return []any{site, path, minute, seq, class, counted, client, hits}
}

// streamClients appends counts as insertPageClients names their columns,
// passing the block on to s as it grows.
func streamClients(buf []byte, s *stream, counts []clientCount, pages []page) []byte {
	limit := s.limit
	flush := func() {
		if len(buf) >= limit {
			buf = s.flush(buf)
		}
	}
	buf = appendStart(buf, 8, len(counts))
	buf = appendColumn(buf, "site", "String")
	for _, k := range counts {
		buf = appendStr(buf, pages[k.page].site)
		flush()
	}
	buf = appendColumn(buf, "path", "String")
	for _, k := range counts {
		buf = appendStr(buf, pages[k.page].path)
		flush()
	}
	buf = appendColumn(buf, "minute", "DateTime")
	for _, k := range counts {
		buf = appendDateTime(buf, k.minute)
		flush()
	}
	buf = appendColumn(buf, "seq", "UInt64")
	for _, k := range counts {
		buf = binary.LittleEndian.AppendUint64(buf, k.seq)
		flush()
	}
	buf = appendColumn(buf, "class", "UInt8")
	for _, k := range counts {
		buf = append(buf, byte(k.class))
		flush()
	}
	buf = appendColumn(buf, "counted", "UInt8")
	for _, k := range counts {
		buf = append(buf, b2u(k.counted))
		flush()
	}
	buf = appendColumn(buf, "client", "UInt64")
	for _, k := range counts {
		buf = binary.LittleEndian.AppendUint64(buf, k.client)
		flush()
	}
	buf = appendColumn(buf, "hits", "UInt64")
	for _, k := range counts {
		buf = binary.LittleEndian.AppendUint64(buf, k.hits)
		flush()
	}
	return buf
}
