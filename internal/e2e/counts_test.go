package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
)

// count runs a query returning one number.
func (b *bundle) count(t *testing.T, sql string) int {
	t.Helper()
	out := b.ch.Query(t, sql)
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("%s: %q", sql, out)
	}
	return n
}

// rowFigures says how many rows of hits were inserted: raw is count()
// when the load finished (a batch loaded twice is there twice until a
// merge), inserted is every row ever inserted, from the parts inserts
// made (level 0), which stay listed for a few minutes after merges (but
// not across a server restart, which drops merged-away parts).
type rowFigures struct{ raw, inserted int }

func (f rowFigures) String() string {
	return fmt.Sprintf("%d rows inserted into hits, %d rows there when loaded", f.inserted, f.raw)
}

// checkCounts requires ClickHouse to hold exactly the published hits:
// distinct hits, the per-minute counts the sweeper reads, and each page's
// count; then the same once every partition is merged.
func (b *bundle) checkCounts(t *testing.T, tr *traffic, pages pageCounts) (f rowFigures) {
	t.Helper()
	b.waitHits(t, tr.n, 30*time.Second) // everything is acked: it is there or lost
	if got := b.count(t, "SELECT sum(h) FROM (SELECT any(hits) AS h FROM pagewatch.page_minutes GROUP BY site, path, minute, seq)"); got != tr.n {
		t.Errorf("per-minute counts sum to %d, want %d", got, tr.n)
	}
	f.raw = b.count(t, "SELECT count() FROM pagewatch.hits")
	f.inserted = b.count(t, "SELECT sum(rows) FROM system.parts WHERE database = 'pagewatch' AND table = 'hits' AND level = 0")
	if f.raw < tr.n || f.inserted < tr.n {
		t.Errorf("%s, fewer than the %d distinct hits", f, tr.n)
	}

	// Every page, from page_minutes as the sweeper counts them.
	got := map[string]int{}
	out := b.ch.Query(t, `SELECT hex(path), sum(h) FROM (
    SELECT path, any(hits) AS h FROM pagewatch.page_minutes WHERE site = '`+site+`' GROUP BY path, minute, seq
) GROUP BY path`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		hexPath, n, _ := strings.Cut(line, "\t")
		path, err := unhex(hexPath)
		if err != nil {
			t.Fatalf("page_minutes path %q: %v", hexPath, err)
		}
		got[path], _ = strconv.Atoi(n)
	}
	bad := 0
	for path, want := range pages.all {
		if got[path] != want {
			if bad++; bad <= 10 {
				t.Errorf("page %q: page_minutes count %d, published %d", path, got[path], want)
			}
		}
	}
	if len(got) != len(pages.all) {
		t.Errorf("page_minutes holds %d pages, %d were published", len(got), len(pages.all))
	}

	// A handful of pages through the sweeper's own query (sinks/clickhouse
	// queryPageCount), for all time and for a window starting at cutoff:
	// the two busiest, and pages with a few hits.
	byCount := make([]string, 0, len(pages.all))
	for p := range pages.all {
		byCount = append(byCount, p)
	}
	slices.SortFunc(byCount, func(a, b string) int {
		if c := pages.all[b] - pages.all[a]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	pick := []string{byCount[0], byCount[1], byCount[len(byCount)/4], byCount[len(byCount)/2], byCount[len(byCount)-1]}
	for _, p := range pick {
		for _, since := range []time.Time{{}, tr.cutoff} {
			want := pages.all[p]
			if !since.IsZero() {
				want = pages.recent[p]
			}
			unix := int64(0)
			if !since.IsZero() {
				unix = since.Unix()
			}
			n := b.count(t, fmt.Sprintf(`SELECT sum(h) FROM (
    SELECT any(hits) AS h
    FROM pagewatch.page_minutes
    WHERE site = '%s' AND path = unhex('%X') AND minute >= toDateTime(%d)
    GROUP BY minute, seq
)`, site, p, unix))
			if n != want {
				t.Errorf("page %q since %d: %d hits counted, %d published", p, unix, n, want)
			}
		}
	}
	t.Logf("per-page counts compared for all %d pages (%d differ); sweeper query checked for %d pages, %q (%d hits) ... %q (%d hits), all time and since %s",
		len(pages.all), bad, len(pick), pick[0], pages.all[pick[0]], pick[len(pick)-1], pages.all[pick[len(pick)-1]], tr.cutoff.Format(time.TimeOnly))

	// Merged, the copies of a batch loaded twice collapse and the counts
	// stay the same.
	b.mergeAll(t, "hits")
	b.mergeAll(t, "page_minutes")
	if got := b.count(t, "SELECT count() FROM pagewatch.hits"); got != tr.n {
		t.Errorf("after OPTIMIZE FINAL hits holds %d rows, want %d", got, tr.n)
	}
	if got := b.hitCount(t); got != tr.n {
		t.Errorf("after OPTIMIZE FINAL: %d distinct hits, want %d", got, tr.n)
	}
	if got := b.count(t, "SELECT sum(h) FROM (SELECT any(hits) AS h FROM pagewatch.page_minutes GROUP BY site, path, minute, seq)"); got != tr.n {
		t.Errorf("after OPTIMIZE FINAL per-minute counts sum to %d, want %d", got, tr.n)
	}
	return f
}

// mergeAll merges each partition of a pagewatch table into one part.
func (b *bundle) mergeAll(t *testing.T, table string) {
	t.Helper()
	out := b.ch.Query(t, "SELECT DISTINCT partition FROM system.parts WHERE database = 'pagewatch' AND table = '"+table+"' AND active")
	for _, p := range strings.Fields(out) {
		b.ch.Query(t, "OPTIMIZE TABLE pagewatch."+table+" PARTITION "+p+" FINAL")
	}
}

func unhex(s string) (string, error) {
	out := make([]byte, len(s)/2)
	for i := range out {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return "", err
		}
		out[i] = byte(v)
	}
	return string(out), nil
}

// checkNoDeadLetters requires that no stream other than the hits and jobs
// streams holds a message (a dead-letter stream would be one) and that the
// loaders given terminated nothing.
func (b *bundle) checkNoDeadLetters(t *testing.T, bb *bus.Bus, loaders []*proc) {
	t.Helper()
	ctx := context.Background()
	if s, err := bb.JS.Stream(ctx, bb.DeadLetterStreamName()); err == nil {
		if n := s.CachedInfo().State.Msgs; n > 0 {
			t.Errorf("dead-letter stream %s holds %d messages", bb.DeadLetterStreamName(), n)
		}
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatal(err)
	}
	names := bb.JS.StreamNames(ctx)
	for name := range names.Name() {
		if name == bb.HitsStreamName() || name == bb.JobsStreamName() {
			continue
		}
		s, err := bb.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.CachedInfo().State.Msgs; n > 0 && !strings.HasPrefix(name, "KV_") {
			t.Errorf("stream %s holds %d messages", name, n)
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	for _, l := range loaders {
		if n := metric(t, l.adminAddr(t), "pagewatch_ingest_load_dead_letters_total"); n != 0 {
			t.Errorf("%s dead-lettered %v messages", l.name, n)
		}
	}
}

// TestThreeLoadersKilled20Times publishes 2,000,000 real hits while three
// loaders run, SIGKILLs one of them at random 20 times over the load (each
// restarted at once), and requires ClickHouse to count every hit exactly
