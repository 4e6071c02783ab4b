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
	rows, pages, _ := sortedRows(batches)
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
	got := countMinutes(rows)
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
