package clickhouse_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// sweepEnd is the sweeps' End in these tests: a Friday afternoon, so the
// week and the month began several sealed days earlier.
var sweepEnd = time.Date(2025, 3, 28, 15, 0, 30, 0, time.UTC)

// truth counts hits as the sweep must: once per (message, line), by the
// minute they fall in.
type truth struct {
	hits map[string][]time.Time // "site path" -> minutes, one per hit
}

func (tr *truth) add(batches []hit.Batch) {
	seen := map[[2]uint64]bool{}
	for _, b := range batches {
		for _, h := range b.Hits {
			if k := [2]uint64{b.Seq, h.Offset}; !seen[k] {
				seen[k] = true
				key := h.Site + " " + h.Path
				tr.hits[key] = append(tr.hits[key], h.Time.Truncate(time.Minute))
			}
		}
	}
}

// count is the window [start, end) of every page, by the minute a hit
// falls in; the zero start is all time.
func (tr *truth) count(starts []time.Time, end time.Time) map[string][]uint64 {
	out := map[string][]uint64{}
	for page, minutes := range tr.hits {
		c := make([]uint64, len(starts))
		for i, s := range starts {
			for _, m := range minutes {
				if !m.Before(s) && m.Before(end) {
					c[i]++
				}
			}
		}
		out[page] = c
	}
	return out
}

// randomBatches are n messages of hits on a few pages over the 12 days
// before sweepEnd, each message within a few hours, in sequence from seq.
func randomBatches(rng *rand.Rand, seq uint64, n int) []hit.Batch {
	var out []hit.Batch
	for i := 0; i < n; i++ {
		b := hit.Batch{Seq: seq + uint64(i)}
		at := sweepEnd.Add(-time.Duration(rng.Int64N(int64(12 * 24 * time.Hour))))
		for j := 0; j < 20+rng.IntN(200); j++ {
			t := at.Add(time.Duration(rng.Int64N(int64(6 * time.Hour))))
			if t.After(sweepEnd.Add(time.Hour)) {
				continue // a few after End, which no window counts
			}
			b.Hits = append(b.Hits, hit.Hit{
				Time: t.Truncate(time.Second), Site: fmt.Sprintf("s%d.example", rng.IntN(3)),
				Path: fmt.Sprintf("/p%d", rng.IntN(7)), Status: 200, Offset: uint64(j) * 100,
			})
		}
		out = append(out, b)
	}
	return out
}

// sweepStarts are the windows a sweep asks for: rolling, calendar (in UTC
// and in a zone whose days begin off a UTC midnight), all time, empty.
func sweepStarts() []time.Time {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	local := sweepEnd.In(ny)
	today := sweepEnd.Truncate(24 * time.Hour)
	return []time.Time{
		sweepEnd.Add(-5 * time.Minute),
		sweepEnd.Add(-time.Hour),
		sweepEnd.Add(-24 * time.Hour),
		today,
		today.AddDate(0, 0, -4), // Monday
		time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, ny), // this month in New York
		sweepEnd.Add(-(5*24*time.Hour + 7*time.Hour + 13*time.Minute + 7*time.Second)),
		{}, // all time
		sweepEnd.Add(time.Hour),
	}
}

// checkWindows compares WindowCounts with the truth for several seal
// boundaries: none, mid-day, before and at End's day.
func checkWindows(t *testing.T, c *clickhouse.Client, tr *truth, sealedBefore []time.Time, floor uint64) {
	t.Helper()
	starts := sweepStarts()
	want := tr.count(starts, sweepEnd)
	for _, sb := range sealedBefore {
		got, err := c.Counts().WindowCounts(context.Background(), traffic.WindowQuery{Starts: starts, End: sweepEnd, SealedBefore: sb, Floor: floor})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, p := range got {
			key := p.Site + " " + p.Path
			seen[key] = true
			if !slices.Equal(p.Counts, want[key]) {
				t.Errorf("sealed before %s: %s counts %v, want %v", sb, key, p.Counts, want[key])
			}
		}
		for key, w := range want {
			if !seen[key] && slices.Max(w) > floor {
				t.Errorf("sealed before %s: %s missing, want %v", sb, key, w)
			}
			if seen[key] && slices.Max(w) <= floor {
				t.Errorf("sealed before %s: %s returned at or below the floor %d", sb, key, floor)
			}
		}
	}
}

func insert(t *testing.T, c *clickhouse.Client, batches []hit.Batch) {
	t.Helper()
	if err := c.Hits().InsertHits(context.Background(), batches); err != nil {
		t.Fatal(err)
	}
}

func seal(t *testing.T, c *clickhouse.Client, before time.Time) int {
	t.Helper()
	n, err := c.Counts().SealDays(context.Background(), before)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sealedHistory loads 40 random messages (seeded with seed, seed+1) and
// seals the days before End's; it returns their truth and that day.
func sealedHistory(t *testing.T, c *clickhouse.Client, seed uint64) (*truth, time.Time) {
	t.Helper()
	tr := &truth{hits: map[string][]time.Time{}}
	batches := randomBatches(rand.New(rand.NewPCG(seed, seed+1)), 1, 40)
	insert(t, c, batches)
	tr.add(batches)
	today := sweepEnd.Truncate(24 * time.Hour)
	seal(t, c, today)
	return tr, today
}

func TestSealedWindowsEqualBruteForce(t *testing.T) {
	b := setup(t)
	rng := rand.New(rand.NewPCG(7, 8))
	tr := &truth{hits: map[string][]time.Time{}}
	batches := randomBatches(rng, 1, 60)
	insert(t, b.client, batches)
	insert(t, b.client, batches[10:20]) // loaded twice: counted once
	tr.add(batches)

	today := sweepEnd.Truncate(24 * time.Hour)
	if n := seal(t, b.client, today); n < 10 {
		t.Fatalf("sealed %d days, want the 12 before End's day (some may have no hits)", n)
	}
	if n := seal(t, b.client, today); n != 0 {
		t.Fatalf("sealing again sealed %d days, want 0", n)
	}
	// Every boundary up to the one sealed is exact; so is none at all.
	bounds := []time.Time{{}, today, today.Add(-3*24*time.Hour + 5*time.Hour), today.Add(-9 * 24 * time.Hour), today.Add(7 * time.Hour)}
	checkWindows(t, b.client, tr, bounds, 0)
	checkWindows(t, b.client, tr, bounds[1:2], 40)

	// After merges, FINAL and the merged rows agree.
	b.server.Query(t, "OPTIMIZE TABLE pw_test.page_days FINAL")
	b.server.Query(t, "OPTIMIZE TABLE pw_test.page_minutes FINAL")
	checkWindows(t, b.client, tr, bounds[1:2], 0)

	// Sites filter.
	got, err := b.client.Counts().WindowCounts(context.Background(), traffic.WindowQuery{
		Sites: []string{"s1.example"}, Starts: []time.Time{{}}, End: sweepEnd, SealedBefore: today,
	})
	if err != nil || len(got) == 0 {
		t.Fatalf("s1 only: %v, %v", got, err)
	}
	for _, p := range got {
		if p.Site != "s1.example" {
			t.Errorf("s1 only returned %s %s", p.Site, p.Path)
		}
	}
}

// Windows ending at a sealed midnight read page_days alone (no minute
// is left to read): a calendar day judged once it closed, a catch-up.
func TestWindowsOfSealedDaysAlone(t *testing.T) {
	b := setup(t)
	tr, today := sealedHistory(t, b.client, 23)
	end := today.Add(-24 * time.Hour)
	starts := []time.Time{end.Add(-24 * time.Hour), end.Add(-4 * 24 * time.Hour), {}}
	want := tr.count(starts, end)
	got, err := b.client.Counts().WindowCounts(context.Background(), traffic.WindowQuery{Starts: starts, End: end, SealedBefore: today})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, p := range got {
		if w := want[p.Site+" "+p.Path]; !slices.Equal(p.Counts, w) {
			t.Errorf("%s %s counts %v, want %v", p.Site, p.Path, p.Counts, w)
		}
		seen++
	}
	pages := 0
	for _, w := range want {
		if slices.Max(w) > 0 {
			pages++
		}
	}
	if seen != pages || pages == 0 {
		t.Errorf("%d pages returned, want %d", seen, pages)
	}
}

// A message whose loaded_days row arrives after a day was sealed, as a
// backfill of old logs or a loader that died before writing it, makes the
// next SealDays seal that day again, and only that day.
func TestLateBatchResealsItsDay(t *testing.T) {
	b := setup(t)
	tr, today := sealedHistory(t, b.client, 9)

	old := today.Add(-6*24*time.Hour + 3*time.Hour)
	late := hit.Batch{Seq: 500}
	for i := 0; i < 30; i++ {
		late.Hits = append(late.Hits, hit.Hit{Time: old.Add(time.Duration(i) * time.Minute), Site: "s0.example", Path: "/p0", Offset: uint64(i)})
	}
	insert(t, b.client, []hit.Batch{late})
	tr.add([]hit.Batch{late})

	// Until it is sealed again, the day counts what it was sealed with.
	starts := []time.Time{{}}
	before, err := b.client.Counts().WindowCounts(context.Background(), traffic.WindowQuery{Sites: []string{"s0.example"}, Starts: starts, End: sweepEnd, SealedBefore: today})
	if err != nil {
		t.Fatal(err)
	}
	if n := seal(t, b.client, today); n != 1 {
		t.Fatalf("late batch resealed %d days, want 1", n)
	}
	after, err := b.client.Counts().WindowCounts(context.Background(), traffic.WindowQuery{Sites: []string{"s0.example"}, Starts: starts, End: sweepEnd, SealedBefore: today})
	if err != nil {
		t.Fatal(err)
	}
	if d := countOf(after, "/p0") - countOf(before, "/p0"); d != 30 {
		t.Errorf("all-time /p0 grew by %d after the reseal, want 30", d)
	}
	checkWindows(t, b.client, tr, []time.Time{today}, 0)
	if n := seal(t, b.client, today); n != 0 {
		t.Fatalf("third seal sealed %d days, want 0", n)
	}
}

// A client keeps the page_days half of its window counts between seals
// (sealedcache.go): another sweeper sealing a late batch, through a client
// of its own, makes the next counts read page_days again, and every
// window stays exact, the kept half's and the minutes'.
func TestKeptSealedDaysFollowAnotherSweepersSeal(t *testing.T) {
	b := setup(t)
	tr, today := sealedHistory(t, b.client, 21)
	checkWindows(t, b.client, tr, []time.Time{today}, 0) // kept from here
	checkWindows(t, b.client, tr, []time.Time{today}, 0)

	other, err := clickhouse.Open(context.Background(), b.cfg, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	late := hit.Batch{Seq: 900}
	for i := 0; i < 25; i++ {
		late.Hits = append(late.Hits, hit.Hit{Time: today.Add(-9*24*time.Hour + time.Duration(i)*time.Minute), Site: "s2.example", Path: "/p3", Offset: uint64(i)})
	}
	insert(t, other, []hit.Batch{late})
	if n := seal(t, other, today); n != 1 {
		t.Fatalf("the other sweeper resealed %d days, want 1", n)
	}
	tr.add([]hit.Batch{late})
	checkWindows(t, b.client, tr, []time.Time{today}, 0)
	// A new page, on a new sealed day only, is in the kept half too.
	fresh := hit.Batch{Seq: 901, Hits: []hit.Hit{{Time: today.Add(-11 * 24 * time.Hour), Site: "s0.example", Path: "/new", Offset: 1}}}
	insert(t, other, []hit.Batch{fresh})
	seal(t, other, today)
	tr.add([]hit.Batch{fresh})
	checkWindows(t, b.client, tr, []time.Time{today}, 0)
}

// A query asked once a day (a page's trend: a start per day over 35
// days) is exact, and keeps nothing: the sweep's own kept half stays,
// and the day's every page is not held until the next.
func TestOnceQueryKeepsNoSealedDays(t *testing.T) {
	b := setup(t)
	tr, today := sealedHistory(t, b.client, 21)
	checkWindows(t, b.client, tr, []time.Time{today}, 0)
	if n := clickhouse.KeptSealed(b.client); n != 1 {
		t.Fatalf("%d halves kept after a sweep's counts, want 1", n)
	}
	var starts []time.Time
	for d := 35; d > 0; d-- {
		starts = append(starts, sweepEnd.Truncate(24*time.Hour).AddDate(0, 0, -d))
	}
	want := tr.count(starts, sweepEnd)
	got, err := b.client.Counts().WindowCounts(context.Background(), traffic.WindowQuery{Starts: starts, End: sweepEnd, SealedBefore: today, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d pages, want %d", len(got), len(want))
	}
	for _, p := range got {
		if w := want[p.Site+" "+p.Path]; !slices.Equal(p.Counts, w) {
			t.Errorf("%s%s: %v, want %v", p.Site, p.Path, p.Counts, w)
		}
	}
	if n := clickhouse.KeptSealed(b.client); n != 1 {
		t.Errorf("%d halves kept after a query asked once, want the sweep's 1", n)
	}

	// Over sealed days alone, the pages under its floor are cut in
	// ClickHouse (windowDaysSQL's having): the rest are exact.
	starts = starts[len(starts)-14:]
	end := today.Truncate(24 * time.Hour)
	for _, floor := range []uint64{1, 20, 60} {
		want := tr.count(starts, end)
		got, err := b.client.Counts().WindowCounts(context.Background(), traffic.WindowQuery{Starts: starts, End: end, SealedBefore: today, Floor: floor, Once: true})
		if err != nil {
			t.Fatal(err)
		}
		over := 0
		for _, w := range want {
			if slices.Max(w) > floor {
				over++
			}
		}
		if len(got) != over || over == 0 {
			t.Errorf("floor %d: %d pages, want %d (and some)", floor, len(got), over)
		}
		for _, p := range got {
			if w := want[p.Site+" "+p.Path]; !slices.Equal(p.Counts, w) {
				t.Errorf("floor %d: %s%s: %v, want %v", floor, p.Site, p.Path, p.Counts, w)
			}
		}
	}
}

func countOf(ps []traffic.PageCount, path string) uint64 {
	for _, p := range ps {
		if p.Path == path {
			return p.Counts[0]
		}
	}
	return 0
}

// Two sweepers sealing at once, one of them with a stale view, and a
// sealer that died after writing page_days but before sealed_days: the
// counts stay exact.
func TestConcurrentAndInterruptedSeals(t *testing.T) {
	b := setup(t)
	rng := rand.New(rand.NewPCG(11, 12))
	tr := &truth{hits: map[string][]time.Time{}}
	batches := randomBatches(rng, 1, 40)
	insert(t, b.client, batches)
	tr.add(batches)
	today := sweepEnd.Truncate(24 * time.Hour)

	// A dead sealer's half: the right page_days rows of one site, and no
	// sealed_days rows. And rows below any real version (which counts at
	// least one row of page_minutes), as of a seal long ago.
	b.server.Query(t, `INSERT INTO pw_test.page_days (site, path, day, hits, version)
SELECT site, path, toDate(minute, 'UTC') AS day, sum(hits), count() FROM pw_test.page_minutes FINAL
WHERE site = 's0.example' GROUP BY site, path, day`)
	b.server.Query(t, `INSERT INTO pw_test.page_days (site, path, day, hits, version)
SELECT site, path, toDate(minute, 'UTC') AS day, 999999, 0 FROM pw_test.page_minutes GROUP BY site, path, day`)

	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.client.Counts().SealDays(context.Background(), today)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	checkWindows(t, b.client, tr, []time.Time{today}, 0)
	if n := seal(t, b.client, today); n != 0 {
		t.Fatalf("sealing after the concurrent seals sealed %d days, want 0", n)
	}
}

// The loader records each (day, message) its counts cover once, however
// often a batch is loaded.
func TestInsertHitsRecordsLoadedDays(t *testing.T) {
	b := setup(t)
	batches := randomBatches(rand.New(rand.NewPCG(13, 14)), 1, 20)
	insert(t, b.client, batches)
	insert(t, b.client, batches[:5])
	want := map[string]bool{}
	for _, bt := range batches {
		for _, h := range bt.Hits {
			want[fmt.Sprintf("%s\t%d", h.Time.UTC().Format(time.DateOnly), bt.Seq)] = true
		}
	}
	got := strings.Fields(strings.ReplaceAll(b.server.Query(t, "SELECT DISTINCT day, seq FROM pw_test.loaded_days"), "\t", "/"))
	if len(got) != len(want) {
		t.Fatalf("loaded_days has %d distinct rows, want %d", len(got), len(want))
	}
	for _, g := range got {
		if !want[strings.ReplaceAll(g, "/", "\t")] {
			t.Errorf("unexpected loaded_days row %s", g)
		}
	}
}

func TestScanMinutes(t *testing.T) {
	b := setup(t)
	tr := &truth{hits: map[string][]time.Time{}}
	batches := randomBatches(rand.New(rand.NewPCG(15, 16)), 1, 30)
	insert(t, b.client, batches)
	insert(t, b.client, batches[3:9])
	tr.add(batches)

	from, to := sweepEnd.Add(-3*24*time.Hour-17*time.Minute), sweepEnd
	want := map[string]uint64{}
	for page, minutes := range tr.hits {
		if !strings.HasPrefix(page, "s2.example ") {
			continue
		}
		for _, m := range minutes {
			if !m.Before(from) && m.Before(to) {
				want[fmt.Sprintf("%s %d", page, m.Unix())]++
			}
		}
	}
	got := map[string]uint64{}
	var last string
	err := b.client.Counts().ScanMinutes(context.Background(), traffic.MinuteScan{Sites: []string{"s2.example"}, From: from, To: to},
		func(site, path string, minute time.Time, hits uint64) error {
			key := fmt.Sprintf("%s %s %d", site, path, minute.Unix())
			// Zero-padded so that string order is (site, path, minute).
			order := fmt.Sprintf("%s\x00%s\x00%012d", site, path, minute.Unix())
			if order <= last {
				return fmt.Errorf("%s came after %q", key, last)
			}
			last = order
			got[key] = hits
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("scanned %d minutes, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %d hits, want %d", k, got[k], w)
		}
	}

	// An error from fn stops the scan and comes back as is.
	stop := errors.New("enough")
	calls := 0
	err = b.client.Counts().ScanMinutes(context.Background(), traffic.MinuteScan{From: from, To: to}, func(string, string, time.Time, uint64) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("ScanMinutes with a failing fn: %v after %d calls", err, calls)
	}
	// The connection is still usable.
	if _, err := b.client.Hits().HitCount(context.Background()); err != nil {
		t.Fatal(err)
	}
}
