package clickhouse_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/domain/hit"
)

// visitorBatches are /pricing's hits from several clients and classes
// in the minutes after base, and the last of them at recent:
//
//	human      clients 101-104, 3 hits each (104's at recent)  counted
//	ai_agent   client 201, 2 hits                               counted
//	unknown    no client key, 3 hits                            counted
//	bot        client 301, 5 hits                               not counted
//	ai_crawler client 401, 4 hits                               not counted
//
// 17 views, 5 visitors (2 in the minutes from recent), 26 hits.
func visitorBatches(base, recent time.Time) []hit.Batch {
	b := hit.Batch{Seq: 11}
	off := uint64(0)
	add := func(at time.Time, n int, class hit.Class, client uint64, uncounted bool) {
		for i := 0; i < n; i++ {
			off += 100
			b.Hits = append(b.Hits, hit.Hit{Time: at.Add(time.Duration(i) * time.Second), Site: "example.com", Path: "/pricing",
				Method: "GET", Status: 200, Class: class, Client: client, Uncounted: uncounted, Offset: off})
		}
	}
	for c := uint64(101); c <= 103; c++ {
		add(base.Add(time.Duration(c-100)*time.Minute), 3, hit.ClassHuman, c, false)
	}
	add(recent, 3, hit.ClassHuman, 104, false)
	add(base, 2, hit.ClassAIAgent, 201, false)
	add(recent, 1, hit.ClassUnknown, 0, false)
	add(base.Add(time.Minute), 2, hit.ClassUnknown, 0, false)
	add(base.Add(2*time.Minute), 5, hit.ClassBot, 301, true)
	add(base.Add(3*time.Minute), 4, hit.ClassAICrawler, 401, true)
	return []hit.Batch{b}
}

// The console's visitor reads against a real server, with the batch
// loaded three times: visitors beside the live view's views, a page's
// visitors per minute and hour, and its hits per class, counted or not.
func TestConsoleVisitors(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	now := time.Now().UTC()
	base := now.Truncate(time.Minute).Add(-20 * time.Minute)
	recent := now.Truncate(time.Minute).Add(-2 * time.Minute)
	for i := 0; i < 3; i++ {
		if err := b.client.Hits().InsertHits(ctx, visitorBatches(base, recent)); err != nil {
			t.Fatal(err)
		}
	}
	live, err := b.client.Traffic().Live(ctx, console.LiveQuery{Now: now, PerSite: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].Views1h != 17 || live[0].Views5m != 4 || live[0].Visitors1h != 5 || live[0].Visitors5m != 1 {
		t.Fatalf("live: %+v; want /pricing with 17 views and 5 visitors in the hour, 4 and 1 in 5 minutes", live)
	}
	from, to := now.Truncate(time.Minute).Add(-time.Hour), now.Truncate(time.Minute).Add(time.Minute)
	mins, err := b.client.Traffic().PageVisitors(ctx, "example.com", "/pricing", from, to, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]uint64{}
	for _, m := range mins {
		got[int64(m.Minute.Sub(base)/time.Minute)] = m.Hits
	}
	// base: the agent; +1: human 101; +2: 102; +3: 103; recent: 104 (the
	// unknown hits have no key, the bot and crawler are not views).
	want := map[int64]uint64{0: 1, 1: 1, 2: 1, 3: 1, int64(recent.Sub(base) / time.Minute): 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("visitors per minute (minutes after base): %v, want %v", got, want)
	}
	hours, err := b.client.Traffic().PageVisitors(ctx, "example.com", "/pricing", from.Truncate(time.Hour), to.Truncate(time.Hour).Add(time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, h := range hours {
		if h.Minute.Truncate(time.Hour) != h.Minute {
			t.Errorf("hourly visitors at %s: not an hour", h.Minute)
		}
		sum += h.Hits
	}
	if len(hours) == 0 || len(hours) > 2 || sum != 5 {
		t.Errorf("visitors per hour: %+v; want 5 in all over one or two hours", hours)
	}
	classes, err := b.client.Traffic().PageClasses(ctx, "example.com", "/pricing", from, to)
	if err != nil {
		t.Fatal(err)
	}
	want2 := "[{human 12 true} 4] [{bot 5 false} 1] [{ai_crawler 4 false} 1] [{unknown 3 true} 0] [{ai_agent 2 true} 1]"
	var g []string
	for _, c := range classes {
		g = append(g, fmt.Sprintf("[%v %d]", c.ClassHits, c.Clients))
	}
	if s := fmt.Sprint(g); s != "["+want2+"]" {
		t.Errorf("classes: %s\nwant       [%s]", s, want2)
	}
	if other, err := b.client.Traffic().PageClasses(ctx, "example.com", "/nope", from, to); err != nil || len(other) != 0 {
		t.Errorf("classes of a page without hits: %+v, %v", other, err)
	}
}
