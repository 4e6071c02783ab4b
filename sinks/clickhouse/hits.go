package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/pagewatch/pagewatch/domain/hit"
)

// InsertHits loads batches of hits and their per-minute counts. It is
// idempotent: inserting the same batches again changes no count (see
// schema/migrations/0001_init.sql).
//
// Each insert is one block within one partition, so the server takes it
// whole or not at all, and a backfill spanning months never exceeds the
// partitions-per-insert limit. Rows are sent already in the tables' sort
// order: ClickHouse then skips sorting the block, which doubles how fast
// 18.16 takes string-keyed rows.
//
// Hits are keyed by their event id, (HitKey, offset), and per-minute
// counts by their message's MsgKey (see hit.Keys): the same line loaded
// again in another message (a recovery, a --from-start run, a replay) is
// the same hits row.
func (h Hits) InsertHits(ctx context.Context, batches []hit.Batch) error {
	bufs := &h.c.bufs
	all, pages, refs := sortedRows(&bufs.rows, batches)
	defer bufs.rows.put(&all)
	if len(all) == 0 {
		return nil
	}
	// Views are the counted hits; the others (bots, by default) are in
	// page_clients only.
	rows, filtered := countedRows(&bufs.rows, all)
	if filtered != nil {
		defer bufs.rows.put(filtered)
	}
	minutes := countMinutes(&bufs.minutes, rows)
	defer bufs.minutes.put(&minutes)
	// Counts first: once a batch's raw hits are visible, so are its counts,
	// which is what anyone comparing the two (tests, operators) assumes.
	for _, part := range splitBy(len(minutes), func(i int) int { return minutes[i].month }) {
		if err := h.insertMinutes(ctx, minutes[part.from:part.to], pages); err != nil {
			return fmt.Errorf("insert %d page-minute counts of month %d: %w", part.to-part.from, part.key, err)
		}
	}
	// Who sent them: written before loaded_days like the counts, though
	// nothing is sealed from them, so that a message's rows are all in
	// once any sealed day counts it.
	clients := countClients(&bufs.clients, all)
	defer bufs.clients.put(&clients)
	for _, part := range splitBy(len(clients), func(i int) int { return int(clients[i].day) }) {
		if err := h.insertClients(ctx, clients[part.from:part.to], pages); err != nil {
			return fmt.Errorf("insert %d page-minute clients of day %d: %w", part.to-part.from, part.key, err)
		}
	}
	// Then which messages those counts hold for which days, never before
	// them: SealDays counts on every message in loaded_days being in
	// page_minutes already (see days.go).
	loaded := loadedDays(minutes)
	for _, part := range splitBy(len(loaded), func(i int) int { return loaded[i].month }) {
		if err := h.insertLoadedDays(ctx, loaded[part.from:part.to]); err != nil {
			return fmt.Errorf("insert %d loaded days of month %d: %w", part.to-part.from, part.key, err)
		}
	}
	for _, part := range splitBy(len(rows), func(i int) int { return int(rows[i].day) }) {
		if err := h.insertHitRows(ctx, rows[part.from:part.to], pages, refs); err != nil {
			return fmt.Errorf("insert %d hits of day %d: %w", part.to-part.from, part.key, err)
		}
	}
	return nil
}

// row is one hit with its keys, and the integer sort keys standing in
// for its partition and page. It holds what the insert writes, so that
// writing the rows column by column reads them in order rather than
// chasing each hit again for every column.
//
// It holds no pointers, so the garbage collector neither scans the rows
// nor slows their copying in the sort with write barriers.
type row struct {
	day     int32  // dayOf(unix), the partition
	page    uint32 // rank of (site, path) among the insert's pages
	ref     uint32 // index of the referrer in the insert's strings
	class   hit.Class
	counted bool
	unix    int64
	seq     uint64 // hits.seq: the batch's HitKey; with the offset, the event id
	msg     uint64 // page_minutes.seq: the batch's MsgKey
	off     uint64 // the hit's line offset
	client  uint64 // the hit's client key
}

// page is a (site, path); an insert's pages are indexed by rank.
type page struct{ site, path string }

// sortedRows orders hits by partition, then by the hits table's key
// (site, path, ts, seq, line_offset), and returns them with their pages
// in rank order and their referrers. The rows are from free, and may go
// back to it once inserted. A batch holds far fewer pages than hits, so
// rows are bucketed by (day, page) in linear time and only each bucket is
// sorted, by integers; within a page, hits arrive almost in time order,
// which the sort finishes quickly.
func sortedRows(free *freeList[[]row], batches []hit.Batch) ([]row, []page, []string) {
	n := 0
	for i := range batches {
		n += batches[i].Len()
	}
	rows := getRows(free, n)
	defer free.put(rows)
	ids := map[page]uint32{}
	var pages []page
	var cache pageCache
	var refs strTable
	days := map[int32]int{}
	// Consecutive hits of a day share it: dayOf is a date conversion.
	var dayStart, dayEnd int64
	var day int32
	var lean leanIDs
	for bi := range batches {
		b := &batches[bi]
		hitKey, msgKey := b.HitKey(), b.MsgKey()
		if b.Lean != nil {
			lean.reset(b.Lean)
			for _, h := range b.Lean.Hits {
				id := lean.page(h.Site, h.Path, ids, &pages)
				ref := lean.ref(h.Referer, &refs)
				if h.Unix < dayStart || h.Unix >= dayEnd {
					day = int32(dayOf(h.Unix))
					dayStart = floorDay(h.Unix)
					dayEnd = dayStart + 86400
					days[day] = 0
				}
				*rows = append(*rows, row{day: day, page: id, unix: h.Unix, seq: hitKey, msg: msgKey, off: h.Offset, ref: ref,
					class: h.Class, counted: !h.Uncounted, client: h.Client})
			}
			continue
		}
		for i := range b.Hits {
			h := &b.Hits[i]
			id, ok := cache.get(h.Site, h.Path)
			if !ok {
				p := page{h.Site, h.Path}
				if id, ok = ids[p]; !ok {
					id = uint32(len(pages))
					ids[p] = id
					pages = append(pages, p)
				}
				cache.put(h.Site, h.Path, id)
			}
			unix := h.Time.Unix()
			if unix < dayStart || unix >= dayEnd {
				day = int32(dayOf(unix))
				dayStart = floorDay(unix)
				dayEnd = dayStart + 86400
				days[day] = 0
			}
			*rows = append(*rows, row{day: day, page: id, unix: unix, seq: hitKey, msg: msgKey, off: h.Offset, ref: refs.id(h.Referer),
				class: h.Class, counted: !h.Uncounted, client: h.Client})
		}
	}
	// Rank pages and days; bucket = day index × pages + page rank.
	order := make([]uint32, len(pages))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int {
		if c := strings.Compare(pages[a].site, pages[b].site); c != 0 {
			return c
		}
		return strings.Compare(pages[a].path, pages[b].path)
	})
	rank := make([]uint32, len(pages))
	ranked := make([]page, len(pages))
	for r, id := range order {
		rank[id] = uint32(r)
		ranked[r] = pages[id]
	}
	dayList := slices.Sorted(maps.Keys(days))
	for i, d := range dayList {
		days[d] = i
	}
	// An insert's hits are of a day or two, in runs: the last day's index
	// answers most rows without the map.
	lastDay, lastIdx := int32(-1), 0
	dayIndex := func(d int32) int {
		if d != lastDay {
			lastDay, lastIdx = d, days[d]
		}
		return lastIdx
	}
	byTime := func(a, b row) int {
		if c := cmp.Compare(a.unix, b.unix); c != 0 {
			return c
		}
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	}
	// A bucket per day and page counts the rows into place in one pass,
	// for an insert of a day or two. Hits of many days on many pages (a
	// log of junk dates, each line its own page: 100,000 hits asked for
	// 50,000 × 50,000 buckets, 38 GB) are sorted instead.
	if buckets := len(dayList) * len(pages); buckets > 4*n+1024 {
		out := (*getRows(free, n))[:n]
		for i, r := range *rows {
			r.page = rank[r.page]
			out[i] = r
		}
		slices.SortFunc(out, func(a, b row) int {
			return cmp.Or(cmp.Compare(a.day, b.day), cmp.Compare(a.page, b.page), byTime(a, b))
		})
		return out, ranked, refs.strs
	}
	starts := make([]int, len(dayList)*len(pages)+1)
	for i := range *rows {
		r := &(*rows)[i]
		r.page = rank[r.page]
		starts[dayIndex(r.day)*len(pages)+int(r.page)+1]++
	}
	for i := 1; i < len(starts); i++ {
		starts[i] += starts[i-1]
	}
	sorted := getRows(free, n)
	out := (*sorted)[:n]
	next := slices.Clone(starts[:len(starts)-1])
	for _, r := range *rows {
		b := dayIndex(r.day)*len(pages) + int(r.page)
		out[next[b]] = r
		next[b]++
	}
	for b := 0; b+1 < len(starts); b++ {
		slices.SortFunc(out[starts[b]:starts[b+1]], byTime)
	}
	return out, ranked, refs.strs
}

// pageCache finds a page by its strings' addresses. Within a message a
// repeated string is one string of the message's dictionary (PWH2), so
// most hits are answered without hashing and comparing their path;
// strings at the same address with the same length are equal.
type pageCache [1024]struct {
	site, path *byte
	sn, pn     int
	id         uint32
}

func (c *pageCache) slot(path string) int {
	return int(uintptr(unsafe.Pointer(unsafe.StringData(path)))>>4) % len(c)
}

func (c *pageCache) get(site, path string) (uint32, bool) {
	e := &c[c.slot(path)]
	if e.path == unsafe.StringData(path) && e.pn == len(path) && e.site == unsafe.StringData(site) && e.sn == len(site) && e.path != nil {
		return e.id, true
	}
	return 0, false
}

func (c *pageCache) put(site, path string, id uint32) {
	e := &c[c.slot(path)]
	e.site, e.sn, e.path, e.pn, e.id = unsafe.StringData(site), len(site), unsafe.StringData(path), len(path), id
}

// strTable numbers strings, finding repeated ones by address first, as
// pageCache does.
type strTable struct {
	ids   map[string]uint32
	strs  []string
	cache [1024]struct {
		p  *byte
		n  int
		id uint32
	}
}

func (t *strTable) id(s string) uint32 {
	p := unsafe.StringData(s)
	e := &t.cache[int(uintptr(unsafe.Pointer(p))>>4)%len(t.cache)]
	if e.p == p && e.n == len(s) && p != nil {
		return e.id
	}
	if t.ids == nil {
		t.ids = map[string]uint32{}
	}
	id, ok := t.ids[s]
	if !ok {
		id = uint32(len(t.strs))
		t.ids[s] = id
		t.strs = append(t.strs, s)
	}
	e.p, e.n, e.id = p, len(s), id
	return id
}

// leanIDs finds the pages and referrers of a Lean batch's hits by their
// strings' ids in the batch: each string is looked up by its bytes once
// per batch, not once per hit.
type leanIDs struct {
	lean *hit.Lean
	// byPath[path id] is the page of (site, path) for the site id
	// siteOf[path id] (a batch is of one site, most often), plus one.
	byPath, siteOf []uint32
	// refs[id] is the referrer's index in the insert's strings, plus one.
	refs []uint32
}

func (l *leanIDs) reset(b *hit.Lean) {
	l.lean = b
	n := len(b.Words)
	if cap(l.byPath) < n {
		l.byPath, l.siteOf, l.refs = make([]uint32, n), make([]uint32, n), make([]uint32, n)
	}
	l.byPath, l.siteOf, l.refs = l.byPath[:n], l.siteOf[:n], l.refs[:n]
	clear(l.byPath)
	clear(l.refs)
}

func (l *leanIDs) page(site, path uint32, ids map[page]uint32, pages *[]page) uint32 {
	if id := l.byPath[path]; id != 0 && l.siteOf[path] == site {
		return id - 1
	}
	p := page{l.lean.Str(site), l.lean.Str(path)}
	id, ok := ids[p]
	if !ok {
		id = uint32(len(*pages))
		ids[p] = id
		*pages = append(*pages, p)
	}
	l.byPath[path], l.siteOf[path] = id+1, site
	return id
}

func (l *leanIDs) ref(ref uint32, t *strTable) uint32 {
	if id := l.refs[ref]; id != 0 {
		return id - 1
	}
	id := t.id(l.lean.Str(ref))
	l.refs[ref] = id + 1
	return id
}

// getRows returns room for n rows from free.
func getRows(free *freeList[[]row], n int) *[]row {
	p := free.get()
	if cap(*p) < n {
		*p = make([]row, 0, n)
	}
	*p = (*p)[:0]
	return p
}

// minuteCount is one page_minutes row.
type minuteCount struct {
	month  int    // YYYYMM, the page_minutes partition
	page   uint32 // as in row
	minute int64
	seq    uint64
	hits   uint64
}

// countMinutes counts hits per (page, minute, seq) from rows as
// sortedRows leaves them, and returns the counts in page_minutes' own
// order within each month, in a slice from free. They are about as many
// as the rows when pages are many and messages small.
func countMinutes(free *freeList[[]minuteCount], rows []row) []minuteCount {
	out := (*free.get())[:0]
	for i := 0; i < len(rows); {
		// One run: the rows of one page in one minute, several messages.
		first := len(out)
		page, minute := rows[i].page, rows[i].unix/60*60
		for ; i < len(rows) && rows[i].unix/60*60 == minute && rows[i].page == page; i++ {
			j := first
			for j < len(out) && out[j].seq != rows[i].msg {
				j++
			}
			if j == len(out) {
				out = append(out, minuteCount{month: int(rows[i].day) / 100, page: page, minute: minute, seq: rows[i].msg})
			}
			out[j].hits++
		}
		slices.SortFunc(out[first:], func(a, b minuteCount) int { return cmp.Compare(a.seq, b.seq) })
	}
	// Rows came ordered by day first; a month holds many days, so restore
	// (month, site, path, minute, seq) order. An insert of one day's hits,
	// the usual, is in that order already.
	byPage := func(a, b minuteCount) int {
		if c := cmp.Compare(a.month, b.month); c != 0 {
			return c
		}
		return cmp.Compare(a.page, b.page)
	}
	if !slices.IsSortedFunc(out, byPage) {
		slices.SortStableFunc(out, byPage)
	}
	return out
}

// span is a run of equal keys in a sorted slice.
type span struct{ key, from, to int }

// splitBy cuts [0, n) into runs where key(i) is constant.
func splitBy(n int, key func(i int) int) []span {
	var out []span
	for i := 0; i < n; {
		s := span{key: key(i), from: i}
		i++
		for i < n && key(i) == s.key {
			i++
		}
		s.to = i
		out = append(out, s)
	}
	return out
}

// dayOf is the UTC day of a Unix time as YYYYMMDD, the hits partition.
func dayOf(unix int64) int {
	y, m, d := time.Unix(unix, 0).UTC().Date()
	return y*10000 + int(m)*100 + d
}

func (h Hits) insertHitRows(ctx context.Context, rows []row, pages []page, refs []string) error {
	if h.c.http != nil {
		return h.c.insertStream(ctx, insertHits, func(b []byte, s *stream) []byte { return streamHits(b, s, rows, pages, refs) })
	}
	return h.c.sendColumns(ctx, insertHits, hitColumns(rows, pages, refs)...)
}

// hitColumns are rows as the driver takes them, in insertHits' order.
func hitColumns(rows []row, pages []page, refs []string) []any {
	n := len(rows)
	var (
		ts              = make([]time.Time, n)
		site, path, ref = make([]string, n), make([]string, n), make([]string, n)
		seq, offset     = make([]uint64, n), make([]uint64, n)
	)
	for i, r := range rows {
		ts[i], site[i], path[i], ref[i] = time.Unix(r.unix, 0).UTC(), pages[r.page].site, pages[r.page].path, refs[r.ref]
		seq[i], offset[i] = r.seq, r.off
	}
	return []any{ts, site, path, ref, seq, offset}
}

func (h Hits) insertMinutes(ctx context.Context, counts []minuteCount, pages []page) error {
	if h.c.http != nil {
		return h.c.insertStream(ctx, insertPageMinutes, func(b []byte, s *stream) []byte { return streamMinutes(b, s, counts, pages) })
	}
	return h.c.sendColumns(ctx, insertPageMinutes, minuteColumns(counts, pages)...)
}

// minuteColumns are counts as the driver takes them, in
// insertPageMinutes' order.
func minuteColumns(counts []minuteCount, pages []page) []any {
	n := len(counts)
	site, path := make([]string, n), make([]string, n)
	minute := make([]time.Time, n)
	seq, hits := make([]uint64, n), make([]uint64, n)
	for i, k := range counts {
		site[i], path[i], minute[i], seq[i], hits[i] = pages[k.page].site, pages[k.page].path, time.Unix(k.minute, 0).UTC(), k.seq, k.hits
	}
	return []any{site, path, minute, seq, hits}
}

// PageCount returns a page's hits since a time (the zero time: all time).
func (h Hits) PageCount(ctx context.Context, site, path string, since time.Time) (uint64, error) {
	var n uint64
	sinceUnix := int64(0)
	if !since.IsZero() {
		sinceUnix = since.Unix()
	}
	if err := h.c.conn.QueryRow(ctx, queryPageCount, site, path, sinceUnix).Scan(&n); err != nil {
		return 0, fmt.Errorf("count hits of %s%s since %d: %w", site, path, sinceUnix, err)
	}
	return n, nil
}

// HitCount returns the number of distinct hits stored.
func (h Hits) HitCount(ctx context.Context) (uint64, error) {
	var n uint64
	if err := h.c.conn.QueryRow(ctx, queryHitCount).Scan(&n); err != nil {
		return 0, fmt.Errorf("count hits: %w", err)
	}
	return n, nil
}
