package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// addVisits loads, as one batch, perClient hits of a page from each of
// clients at a time.
func (b *bundle) addVisits(t *testing.T, path string, clients []uint64, perClient int, at time.Time) {
	t.Helper()
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	for _, c := range clients {
		for range perClient {
			batch.Hits = append(batch.Hits, hit.Hit{Time: at, Site: "example.com", Path: path, Class: hit.ClassHuman, Client: c, Offset: uint64(len(batch.Hits))})
		}
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
}

// keys returns n client keys from first on.
func keys(first, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(first + i)
	}
	return out
}

// A threshold rule counting visitors fires when the page's distinct
// clients pass it, with that count, and not on views: a thousand views
// from the same people add no visitor, and a batch loaded twice adds none.
func TestVisitorThresholdFiresOnDistinctClients(t *testing.T) {
	b := setup(t)
	r := rule("people", "/pricing", "1h", 50)
	r.Count = rules.CountVisitors
	views := rule("views", "/pricing", "1h", 5000)
	b.cfg.Rules = []rules.Rule{r, views}
	now := time.Now().UTC().Truncate(time.Minute)
	c := &clock{t: now}
	s := b.sweeper(t, c)

	b.addVisits(t, "/pricing", keys(1, 50), 4, now.Add(-20*time.Minute)) // 50 visitors, 200 views
	b.sweep(t, s)
	b.addVisits(t, "/pricing", keys(1, 10), 100, now.Add(-10*time.Minute)) // 1,000 more views, no new visitor
	b.sweep(t, s)
	if jobs := b.jobs(t); len(jobs) != 0 {
		t.Fatalf("50 visitors is not more than 50, and 1,200 views not more than 5,000; got %+v", jobs)
	}
	b.addVisits(t, "/pricing", keys(51, 1), 1, now.Add(-5*time.Minute)) // the 51st visitor
	b.seq--                                                             // ... loaded again, as one message
	b.addVisits(t, "/pricing", keys(51, 1), 1, now.Add(-5*time.Minute))
	b.sweep(t, s)
	b.sweep(t, s)
	jobs := b.jobs(t)
	if len(jobs) != 1 || jobs[0].Rule != "people" || jobs[0].Count != 51 {
		t.Fatalf("want one crossing of people at 51 visitors, got %v", fired(jobs))
	}
}

// A spike rule counting visitors judges a page's visitors against the
// visitors of the same hour on the days before, each a distinct count
// over its hour: many views from a few clients are no spike of people,
// and a surge of new people is.
func TestVisitorSpikeFiresOnNewPeopleNotOnViews(t *testing.T) {
	b := setup(t)
	off := 0.0
	b.cfg.Rules = []rules.Rule{{Name: "people-spike", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"), Count: rules.CountVisitors,
		Spike:   &rules.Spike{Factor: 4, MinCount: 30, Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 3}}},
		Clients: rules.ClientGuard{MaxTopShare: &off, MaxUnknownShare: &off},
		Rearm:   rules.Rearm{Hysteresis: 0.5}, Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}}
	now := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour + 30*time.Minute)
	b.addVisits(t, "/post", keys(1, 1), 1, now.Add(-5*24*time.Hour)) // the data begins
	for k := 1; k <= 3; k++ {
		// 10 visitors in the same hour each day, 20 views each.
		b.addVisits(t, "/post", keys(1000*k, 10), 20, now.Add(-time.Duration(k)*24*time.Hour-20*time.Minute))
	}
	c := &clock{t: now}
	s := b.sweeper(t, c)
	b.addVisits(t, "/post", keys(1, 5), 400, now.Add(-20*time.Minute)) // 2,000 views from 5 people
	b.sweep(t, s)
	if jobs := b.jobs(t); len(jobs) != 0 {
		t.Fatalf("5 visitors against 10 is no spike, however many views; got %+v", jobs)
	}
	b.addVisits(t, "/post", keys(100, 40), 1, now.Add(-10*time.Minute)) // 45 visitors >= 4 × 10 and >= 30
	b.sweep(t, s)
	jobs := b.jobs(t)
	if len(jobs) != 1 || jobs[0].Event != "fire" || jobs[0].Count != 45 {
		t.Fatalf("want one fire at 45 visitors, got %+v", jobs)
	}
	if w := jobs[0].Why; w == nil || w.Baseline != 10 || w.Count != 45 {
		t.Fatalf("why: %+v", w)
	}
}
