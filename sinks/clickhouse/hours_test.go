package clickhouse_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// hourTruth is every page's hits per UTC hour, as the sweep must count
// them (once per message and line).
func hourTruth(tr *truth) map[string]map[int64]uint64 {
	out := map[string]map[int64]uint64{}
	for page, minutes := range tr.hits {
		out[page] = map[int64]uint64{}
		for _, m := range minutes {
			out[page][m.Truncate(time.Hour).Unix()]++
		}
	}
	return out
}

// checkHours compares HourCounts over every hour of the data, with the
// given boundary, with the truth.
func checkHours(t *testing.T, c *clickhouse.Client, tr *truth, sealedBefore time.Time) {
	t.Helper()
	want := hourTruth(tr)
	got := map[string]map[int64]uint64{}
	q := traffic.HourQuery{Sites: []string{"s0.example", "s1.example", "s2.example"}, SealedBefore: sealedBefore,
		// Spans across the boundary, on both sides, and a gap.
		Spans: []traffic.Span{
			{From: sweepEnd.Add(-13 * 24 * time.Hour).Truncate(time.Hour), To: sweepEnd.Add(-5 * 24 * time.Hour).Truncate(time.Hour)},
			{From: sweepEnd.Add(-5*24*time.Hour + 3*time.Hour).Truncate(time.Hour), To: sweepEnd.Add(2 * time.Hour).Truncate(time.Hour)},
		}}
	for i := range 7 {
		q.Paths = append(q.Paths, "/p"+string(rune('0'+i)))
	}
	err := c.Counts().HourCounts(context.Background(), q, func(site, path string, hour time.Time, hits uint64) {
		key := site + " " + path
		if got[key] == nil {
			got[key] = map[int64]uint64{}
		}
		got[key][hour.Unix()] += hits
	})
	if err != nil {
		t.Fatal(err)
	}
	in := func(h int64) bool {
		for _, s := range q.Spans {
			if h >= s.From.Unix() && h < s.To.Unix() {
				return true
			}
		}
		return false
	}
	for page, hours := range want {
		for h, n := range hours {
			if in(h) && got[page][h] != n {
				t.Errorf("sealed before %v: %s at %v: %d, want %d", sealedBefore, page, time.Unix(h, 0).UTC(), got[page][h], n)
			}
		}
	}
	for page, hours := range got {
		for h, n := range hours {
			if !in(h) || want[page][h] != n {
				t.Errorf("sealed before %v: %s at %v: %d, want %d (in the spans: %v)", sealedBefore, page, time.Unix(h, 0).UTC(), n, want[page][h], in(h))
			}
		}
	}
}

// Hour counts read from page_hours for the sealed days and page_minutes
// for the rest equal the brute force, before and after merges, with a
// batch loaded twice; a late batch for a sealed day makes the next
// SealHours seal that day's hours again, and only that day's.
func TestSealedHoursEqualBruteForce(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 12))
	tr := &truth{hits: map[string][]time.Time{}}
	batches := randomBatches(rng, 1, 60)
	insert(t, b.client, batches)
	insert(t, b.client, batches[5:15]) // loaded twice: counted once
	tr.add(batches)

	today := sweepEnd.Truncate(24 * time.Hour)
	n, err := b.client.Counts().SealHours(ctx, today)
	if err != nil || n < 10 {
		t.Fatalf("SealHours = %d, %v; want the days before End's day", n, err)
	}
	if n, err := b.client.Counts().SealHours(ctx, today); err != nil || n != 0 {
		t.Fatalf("SealHours again = %d, %v; want 0", n, err)
	}
	for _, sb := range []time.Time{{}, today, today.Add(-4*24*time.Hour + 7*time.Hour)} {
		checkHours(t, b.client, tr, sb)
	}
	b.server.Query(t, "OPTIMIZE TABLE pw_test.page_hours FINAL")
	checkHours(t, b.client, tr, today)

	// A late message for a sealed day: read before the next seal, its
	// hits are missing from that day's hours (as from page_days); after
	// it, they count, and only its day was sealed again.
	late := randomBatches(rng, 1000, 1)
	for i := range late[0].Hits {
		late[0].Hits[i].Time = today.Add(-6*24*time.Hour + time.Duration(i)*time.Minute)
	}
	insert(t, b.client, late)
	tr.add(late)
	if n, err := b.client.Counts().SealHours(ctx, today); err != nil || n != 1 {
		t.Fatalf("SealHours after a late batch = %d, %v; want its day only", n, err)
	}
	checkHours(t, b.client, tr, today)
}
