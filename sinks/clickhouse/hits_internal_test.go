package clickhouse

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
)

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
	rows := sortedRows(batches)
	key := func(r row) []any { return []any{r.day, r.hit.Site, r.hit.Path, r.unix, r.seq, r.hit.Offset} }
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		less := a.day < b.day || a.day == b.day && (a.hit.Site < b.hit.Site || a.hit.Site == b.hit.Site &&
			(a.hit.Path < b.hit.Path || a.hit.Path == b.hit.Path && (a.unix < b.unix || a.unix == b.unix &&
				(a.seq < b.seq || a.seq == b.seq && a.hit.Offset <= b.hit.Offset))))
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
	got := countMinutes(rows)
	if len(got) != len(want) {
		t.Fatalf("%d minute rows, want %d", len(got), len(want))
	}
	for i, c := range got {
		if want[mk{c.site, c.path, c.minute, c.seq}] != c.hits {
			t.Fatalf("row %+v: want %d hits", c, want[mk{c.site, c.path, c.minute, c.seq}])
		}
		if i > 0 {
			p := got[i-1]
			if p.month > c.month || p.month == c.month &&
				(p.site > c.site || p.site == c.site && (p.path > c.path || p.path == c.path &&
					(p.minute > c.minute || p.minute == c.minute && p.seq >= c.seq))) {
				t.Fatalf("minute rows %d and %d out of order: %+v then %+v", i-1, i, p, c)
			}
		}
	}
}
