package clickhouse

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pierrec/lz4/v4"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// A batch of junk dates, each hit on a page of its own (a log of random
// dates and paths, or spoofed syslog lines), is sorted as any other, in
// memory in proportion to its hits: bucketing by day and page asked for
// days × pages buckets (38 GB at the default batch of 100,000).
func TestSortedRowsOfJunkDates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	b := hit.Batch{Seq: 1}
	for i := range 20_000 {
		b.Hits = append(b.Hits, hit.Hit{
			Time:   time.Unix(rng.Int64N(1<<32), 0),
			Site:   "a.example",
			Path:   fmt.Sprintf("/%d", rng.IntN(1_000_000)),
			Offset: uint64(i),
		})
	}
	rows, pages, _ := sortedRows(nil, []hit.Batch{b})
	if len(rows) != len(b.Hits) {
		t.Fatalf("%d rows of %d hits", len(rows), len(b.Hits))
	}
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		pa, pb := pages[a.page], pages[b.page]
		less := a.day < b.day || a.day == b.day && (pa.path < pb.path || pa.path == pb.path && a.unix <= b.unix)
		if !less {
			t.Fatalf("rows %d and %d out of order: day %d %s %d, then day %d %s %d", i-1, i, a.day, pa.path, a.unix, b.day, pb.path, b.unix)
		}
	}
}

// The insert relies on two properties of sortedRows and countMinutes:
// rows leave in the hits table's key order (else ClickHouse sorts each
// block itself, at half the speed), and the per-minute counts equal a
// plain count.
func TestSortedRowsAndMinuteCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	paths := []string{"/", "/a", "/a/b", "/b", "/\xff", "/pricing", "/ä"}
	base := time.Date(2026, 1, 31, 23, 58, 0, 0, time.UTC) // crosses a day and a month
	var batches []hit.Batch
	for seq := uint64(10); seq < 20; seq++ {
		b := hit.Batch{Seq: seq}
		for i := 0; i < 500; i++ {
			b.Hits = append(b.Hits, hit.Hit{
				Time:   base.Add(time.Duration(rng.IntN(300)) * time.Second),
				Site:   []string{"a.example", "b.example"}[rng.IntN(2)],
				Path:   paths[rng.IntN(len(paths))],
				Offset: uint64(i),
			})
		}
		batches = append(batches, b)
	}
	rows, pages, _ := sortedRows(nil, batches)
	key := func(r row) []any { return []any{r.day, pages[r.page].site, pages[r.page].path, r.unix, r.seq, r.off} }
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		pa, pb := pages[a.page], pages[b.page]
		less := a.day < b.day || a.day == b.day && (pa.site < pb.site || pa.site == pb.site &&
			(pa.path < pb.path || pa.path == pb.path && (a.unix < b.unix || a.unix == b.unix &&
				(a.seq < b.seq || a.seq == b.seq && a.off <= b.off))))
		if !less {
			t.Fatalf("rows %d and %d out of order: %v then %v", i-1, i, key(a), key(b))
		}
	}
	type mk struct {
		site, path string
		minute     int64
		seq        uint64
	}
	want := map[mk]uint64{}
	for _, b := range batches {
		for _, h := range b.Hits {
			want[mk{h.Site, h.Path, h.Time.Unix() / 60 * 60, b.Seq}]++
		}
	}
	got := countMinutes(nil, rows)
	if len(got) != len(want) {
		t.Fatalf("%d minute rows, want %d", len(got), len(want))
	}
	for i, c := range got {
		cp := pages[c.page]
		if want[mk{cp.site, cp.path, c.minute, c.seq}] != c.hits {
			t.Fatalf("row %+v: want %d hits", c, want[mk{cp.site, cp.path, c.minute, c.seq}])
		}
		if i > 0 {
			p := got[i-1]
			pp := pages[p.page]
			if p.month > c.month || p.month == c.month &&
				(pp.site > cp.site || pp.site == cp.site && (pp.path > cp.path || pp.path == cp.path &&
					(p.minute > c.minute || p.minute == c.minute && p.seq >= c.seq))) {
				t.Fatalf("minute rows %d and %d out of order: %+v then %+v", i-1, i, p, c)
			}
		}
	}
}

// leanOf is b as the loader hands it over: encoded, then decoded lean.
func leanOf(t testing.TB, b hit.Batch) hit.Batch {
	var e hit.Encoder
	for i := range b.Hits {
		e.Add(&b.Hits[i])
	}
	lean := new(hit.Lean)
	if err := hit.DecodeLean(slices.Clone(e.Bytes()), lean); err != nil {
		t.Fatal(err)
	}
	b.Hits, b.Lean = nil, lean
	return b
}

// manyBatches are hostileBatches and one of 20,000 hits with more
// distinct strings than the encoding's dictionary holds.
func manyBatches() []hit.Batch {
	rng := rand.New(rand.NewPCG(5, 6))
	batches := hostileBatches()
	many := hit.Batch{Seq: 7, Key: 8, LineKey: 9}
	base := time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC)
	for i := range 20_000 {
		many.Hits = append(many.Hits, hit.Hit{Time: base.Add(time.Duration(rng.IntN(7200)) * time.Second),
			Site: []string{"a.example", "b.example"}[rng.IntN(2)], Path: fmt.Sprintf("/p/%d", rng.IntN(12_000)),
			Referer: fmt.Sprintf("r%d", rng.IntN(9_000)), Offset: uint64(i) * 100})
	}
	return append(batches, many)
}

// Batches decoded lean insert the very blocks the same hits as Hit
// values do: hostile strings, more distinct strings than the encoding's
// dictionary (so that one string has several ids in a batch), and lean
// batches mixed with others in one insert.
func TestLeanBatchesEncodeAsHits(t *testing.T) {
	batches := manyBatches()
	var lean, mixed []hit.Batch
	for i, b := range batches {
		lean = append(lean, leanOf(t, b))
		if i%2 == 0 {
			mixed = append(mixed, lean[i])
		} else {
			mixed = append(mixed, b)
		}
	}
	blocks := func(batches []hit.Batch) [3][]byte {
		rows, pages, refs := sortedRows(nil, batches)
		minutes := countMinutes(nil, rows)
		return [3][]byte{appendHits(nil, rows, pages, refs), appendMinutes(nil, minutes, pages), appendDays(nil, loadedDays(minutes))}
	}
	want := blocks(batches)
	for name, bs := range map[string][]hit.Batch{"lean": lean, "mixed": mixed} {
		got := blocks(bs)
		for i, table := range []string{"hits", "page_minutes", "loaded_days"} {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s: %s block differs at byte %d (%d bytes, want %d)", name, table, firstDiff(got[i], want[i]), len(got[i]), len(want[i]))
			}
		}
	}
}

// BenchmarkEncodeInsert is the loader's CPU for an insert of 100,000
// real hits in 20 messages decoded lean, short of sending it: ordering
// the rows, counting minutes, and encoding and compressing the blocks.
func BenchmarkEncodeInsert(b *testing.B) {
	lines := realdata.Lines(b, realdata.ApacheLog)
	var e logformat.Entry
	base := time.Now().UTC().Truncate(time.Minute)
	var batches []hit.Batch
	for m := range 20 {
		bt := hit.Batch{Seq: uint64(m + 1), Key: uint64(m + 1), LineKey: 1}
		for i := m * 5000; i < (m+1)*5000; i++ {
			if err := logformat.Parse(lines[i%len(lines)], &e); err != nil {
				b.Fatal(err)
			}
			bt.Hits = append(bt.Hits, hit.Hit{Time: base.Add(time.Duration(i) * 600 * time.Microsecond), Site: "example.com",
				Path: string(e.Target), Method: string(e.Method), Status: uint16(e.Status), Referer: string(e.Referer), Offset: uint64(i) * 200})
		}
		batches = append(batches, leanOf(b, bt))
	}
	// Each block whole, then compressed whole, as inserts did before
	// they streamed.
	b.Run("whole", func(b *testing.B) {
		var bufs buffers
		c := new(lz4.Compressor)
		var block, body []byte
		for b.Loop() {
			rows, pages, refs := sortedRows(&bufs.rows, batches)
			minutes := countMinutes(&bufs.minutes, rows)
			for _, blk := range [][]byte{appendMinutes(block[:0], minutes, pages), appendDays(block[:0], loadedDays(minutes)), appendHits(block[:0], rows, pages, refs)} {
				block = blk
				var err error
				if body, err = framed(c, body[:0], block); err != nil {
					b.Fatal(err)
				}
			}
			bufs.minutes.put(&minutes)
			bufs.rows.put(&rows)
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/100_000*1e6, "cpu-s/Mrows")
	})
	// Each block streamed a frame at a time, as inserts send them.
	b.Run("streamed", func(b *testing.B) {
		var bufs buffers
		for b.Loop() {
			rows, pages, refs := sortedRows(&bufs.rows, batches)
			minutes := countMinutes(&bufs.minutes, rows)
			days := loadedDays(minutes)
			for _, encode := range []func([]byte, *stream) []byte{
				func(buf []byte, s *stream) []byte { return streamMinutes(buf, s, minutes, pages) },
				func(buf []byte, _ *stream) []byte { return appendDays(buf, days) },
				func(buf []byte, s *stream) []byte { return streamHits(buf, s, rows, pages, refs) },
			} {
				body := &nativeBody{lz4: true, bufs: &bufs, encode: encode, done: make(chan struct{})}
				if _, err := body.WriteTo(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			bufs.minutes.put(&minutes)
			bufs.rows.put(&rows)
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/100_000*1e6, "cpu-s/Mrows")
	})
}

// An insert's body, streamed a frame at a time as the block is encoded,
// is the whole block (lz4 off) or its LZ4 frames (on), through WriteTo,
// which the transport uses, and through Read.
func TestStreamedBodies(t *testing.T) {
	batches := manyBatches()
	for i := range 30 { // a hits block of several frames
		b := batches[len(batches)-1]
		b.Seq, b.LineKey = b.Seq+uint64(i)+1, b.LineKey+uint64(i)+1
		batches = append(batches, b)
	}
	rows, pages, refs := sortedRows(nil, batches)
	minutes := countMinutes(nil, rows)
	for _, c := range []struct {
		name   string
		block  []byte
		encode func([]byte, *stream) []byte
	}{
		{"hits", appendHits(nil, rows, pages, refs), func(b []byte, s *stream) []byte { return streamHits(b, s, rows, pages, refs) }},
		{"page_minutes", appendMinutes(nil, minutes, pages), func(b []byte, s *stream) []byte { return streamMinutes(b, s, minutes, pages) }},
	} {
		if c.name == "hits" && len(c.block) < 3*frameSize {
			t.Fatalf("hits block of %d bytes, want several frames", len(c.block))
		}
		compressed, err := framed(new(lz4.Compressor), nil, c.block)
		if err != nil {
			t.Fatal(err)
		}
		for _, lz4 := range []bool{false, true} {
			want := c.block
			if lz4 {
				want = compressed
			}
			var viaWriteTo bytes.Buffer
			body := &nativeBody{lz4: lz4, bufs: new(buffers), encode: c.encode, done: make(chan struct{})}
			if _, err := body.WriteTo(&viaWriteTo); err != nil {
				t.Fatal(err)
			}
			body = &nativeBody{lz4: lz4, bufs: new(buffers), encode: c.encode, done: make(chan struct{})}
			viaRead, err := io.ReadAll(struct{ io.Reader }{body})
			if err != nil {
				t.Fatal(err)
			}
			body.wait()
			for how, got := range map[string][]byte{"WriteTo": viaWriteTo.Bytes(), "Read": viaRead} {
				if !bytes.Equal(got, want) {
					t.Errorf("%s, lz4 %v, through %s: %d bytes, want %d; first difference at byte %d", c.name, lz4, how, len(got), len(want), firstDiff(got, want))
				}
			}
		}
	}
}

// roundTripper answers every request with its function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A transport that sends an insert again (GetBody, as on a kept-alive
// connection found closed) gets the same body again, and the insert
// returns only once every body it handed out is done with.
func TestInsertBodyAgain(t *testing.T) {
	batches := manyBatches()
	rows, pages, refs := sortedRows(nil, batches)
	want, err := framed(new(lz4.Compressor), nil, appendHits(nil, rows, pages, refs))
	if err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	h := &httpInserter{urls: []string{"http://127.0.0.1:1/"}, lz4: true, bufs: new(buffers), client: &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		var first bytes.Buffer
		if _, err := io.Copy(&first, r.Body); err != nil {
			return nil, err
		}
		again, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		second, err := io.ReadAll(struct{ io.Reader }{again})
		if err != nil {
			return nil, err
		}
		sent = append(sent, first.Bytes(), second)
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(""))}, nil
	})}}
	if err := h.insert(context.Background(), insertHits, func(b []byte, s *stream) []byte { return streamHits(b, s, rows, pages, refs) }); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 2 {
		t.Fatalf("%d bodies sent, want 2", len(sent))
	}
	for i, got := range sent {
		if !bytes.Equal(got, want) {
			t.Errorf("body %d: %d bytes, want %d", i, len(got), len(want))
		}
	}
}
