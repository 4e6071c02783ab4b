package sweep

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// addReferred loads n hits of a page at a time from a referer.
func (b *bundle) addReferred(t *testing.T, path, referer string, n int, at time.Time) {
	t.Helper()
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	for i := 0; i < n; i++ {
		batch.Hits = append(batch.Hits, hit.Hit{Time: at, Site: "example.com", Path: path, Referer: referer, Offset: uint64(i)})
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
}

// A crossing's why, in its job and in the history, says where the page
// stands on its site, which referrer domains sent it (against the week
// before, and those new to it) and its busiest minute, read from
// ClickHouse by the sweeper.
func TestCrossingWhyHasRankReferrersAndBusiestMinute(t *testing.T) {
	b := setup(t)
	now := time.Now().UTC().Truncate(time.Minute)
	c := &clock{t: now}
	// The week before: the page's referrers were search only.
	b.addReferred(t, "/pricing", "https://www.search.example/q", 40, now.Add(-3*24*time.Hour))
	// The hour: news sends most, search some, a hostile referer one.
	b.addReferred(t, "/pricing", "https://news.example/story", 70, now.Add(-10*time.Minute))
	b.addReferred(t, "/pricing", "https://search.example/q", 30, now.Add(-20*time.Minute))
	b.addReferred(t, "/pricing", "https://evil.example/<script>alert(1)</script>\r\nBcc: x@evil.example", 1, now.Add(-21*time.Minute))
	b.addHits(t, "/home", 500, now.Add(-30*time.Minute)) // busier: /pricing ranks second
	b.addHits(t, "/about", 3, now.Add(-30*time.Minute))
	b.sweep(t, b.sweeper(t, c))

	var hourly *crossing.Crossing
	for _, x := range b.jobs(t) {
		if x.Rule == "hourly" {
			hourly = &x
		}
	}
	if hourly == nil || hourly.Why == nil {
		t.Fatalf("no hourly crossing with a why: %+v", b.jobs(t))
	}
	w := hourly.Why
	if w.Kind != "threshold" || w.Count != 101 || w.Baseline != 100 || w.Rank != 2 || w.RankOf != 3 {
		t.Errorf("why: kind %s count %d baseline %v rank %d of %d; want threshold, 101, 100, 2 of 3", w.Kind, w.Count, w.Baseline, w.Rank, w.RankOf)
	}
	if !w.BusiestMinute.Equal(now.Add(-10*time.Minute)) || w.BusiestHits != 70 {
		t.Errorf("busiest minute %v with %d, want %v with 70", w.BusiestMinute, w.BusiestHits, now.Add(-10*time.Minute))
	}
	want := []crossing.ReferrerShare{
		{Domain: "news.example", Hits: 70, Share: 0.693, BaselineShare: 0},
		{Domain: "search.example", Hits: 30, Share: 0.297, BaselineShare: 1},
		{Domain: "evil.example", Hits: 1, Share: 0.01, BaselineShare: 0},
	}
	if !slices.Equal(w.Referrers, want) {
		t.Errorf("referrers %+v\nwant %+v", w.Referrers, want)
	}
	if !slices.Equal(w.NewReferrers, []string{"news.example", "evil.example"}) {
		t.Errorf("new referrers %v, want news.example and evil.example", w.NewReferrers)
	}
	got := b.chSrv.Query(t, "SELECT visitParamExtractUInt(why, 'rank'), visitParamExtractUInt(why, 'busiest_hits') FROM pagewatch.crossing_whys FINAL WHERE crossing_key = '"+hourly.Key+"'")
	if got != "2\t70\n" {
		t.Errorf("crossing_whys row of %s: %q, want rank 2 and busiest 70", hourly.Key, got)
	}
}

// Without an explainer, or when it fails, the crossing still goes out
// with the sweep's part of the why.
func TestExplainFailureKeepsTheSweepsWhy(t *testing.T) {
	s := &Sweeper{explainer: failingExplainer{}, logger: slog.New(slog.DiscardHandler)}
	x := crossing.Crossing{Key: "k", Site: "s", Path: "/p", Count: 5, CrossedAt: time.Now(), Why: &crossing.Why{Kind: "threshold", Count: 5}}
	s.explain(context.Background(), []job{{x: x}})
	if x.Why.Rank != 0 || x.Why.Referrers != nil || x.Why.Count != 5 {
		t.Errorf("why after a failed explain: %+v", x.Why)
	}
}

type failingExplainer struct{}

func (failingExplainer) Explain(context.Context, traffic.ExplainQuery) (traffic.Explanation, error) {
	return traffic.Explanation{}, context.DeadlineExceeded
}

// Long windows are not ranked and are searched over their last week;
// all-time windows over their last day.
func TestExplainQueryBoundsTheWindow(t *testing.T) {
	at := time.Date(2025, 3, 31, 12, 0, 30, 0, time.UTC)
	month := explainQuery(crossing.Crossing{CrossedAt: at, WindowFrom: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), WindowTo: at.Truncate(time.Minute).Add(time.Minute)})
	if month.Rank || month.To.Sub(month.From) != maxExplainWindow || !month.BaselineFrom.Equal(month.From.Add(-referrerPeriod)) {
		t.Errorf("month: %+v", month)
	}
	hour := explainQuery(crossing.Crossing{CrossedAt: at, WindowFrom: at.Add(-time.Hour), WindowTo: at})
	if !hour.Rank || !hour.From.Equal(at.Add(-time.Hour)) {
		t.Errorf("hour: %+v", hour)
	}
	all := explainQuery(crossing.Crossing{CrossedAt: at})
	if all.Rank || all.To.Sub(all.From) != 24*time.Hour || !all.To.Equal(time.Date(2025, 3, 31, 12, 1, 0, 0, time.UTC)) {
		t.Errorf("all time: %+v", all)
	}
}
