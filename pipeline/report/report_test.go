package report_test

import (
	"context"
	"errors"
	"mime"
	netmail "net/mail"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/pipeline/report"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// mailer delivers reports through a real mail.Sender; fail makes the
// next deliveries fail.
type mailer struct {
	cfg  mail.Config
	fail atomic.Int32
}

func (m *mailer) DeliverReport(ctx context.Context, _ string, to []string, r report.Report) error {
	if m.fail.Add(-1) >= 0 {
		return errors.New("injected failure")
	}
	s, err := mail.New(m.cfg, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.SendReport(ctx, r, to)
}

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

// A weekly report in Berlin over known counts: the exact top pages,
// movers, newcomer, milestone, totals and chart, read from real
// ClickHouse and mailed over SMTP once, however often it is sent.
func TestWeeklyReportHasTheExactMovers(t *testing.T) {
	logger := testenv.Logger(t)
	b, _ := testenv.NATS(t, logger)
	ch, _ := testenv.ClickHouse(t, logger)
	sm := smtptest.Start(t)

	// Cur is Mon 2026-11-16 to Mon 2026-11-23 in Berlin (UTC+1):
	// [2026-11-15 23:00, 2026-11-22 23:00) UTC; Prev the week before.
	var hits []hit.Hit
	add := func(site, path string, at time.Time, n int) {
		for range n {
			hits = append(hits, hit.Hit{Time: at, Site: site, Path: path, Offset: uint64(len(hits))})
		}
	}
	const site = "example.com"
	add(site, "/d", utc("2026-11-10 12:00"), 40)
	add(site, "/d", utc("2026-11-18 12:00"), 40)
	add(site, "/a", utc("2026-11-15 22:30"), 4)  // 23:30 Sunday in Berlin: Prev
	add(site, "/a", utc("2026-11-15 23:10"), 30) // 00:10 Monday in Berlin: Cur
	add(site, "/a", utc("2026-11-22 23:05"), 7)  // after Cur
	add(site, "/b", utc("2026-11-12 08:00"), 50)
	add(site, "/b", utc("2026-11-22 22:59"), 20) // 23:59 Sunday: Cur's last day
	add(site, "/c", utc("2026-11-20 10:00"), 15)
	add(site, "/m", utc("2026-10-01 10:00"), 990)
	add(site, "/m", utc("2026-11-19 10:00"), 12) // 1,002 all time
	add(site, "/e", utc("2026-11-08 22:30"), 3)  // before Prev
	add(site, "/e", utc("2026-11-09 00:30"), 8)
	add("other.example", "/a", utc("2026-11-18 12:00"), 100)
	if err := ch.Hits().InsertHits(t.Context(), []hit.Batch{{Seq: 1, Hits: hits}}); err != nil {
		t.Fatal(err)
	}

	claims, err := b.KV(t.Context(), bus.BucketReports, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	mc := mail.DefaultConfig()
	mc.Transport, mc.From = mail.TransportSMTP, "pagewatch@example.com"
	mc.SMTP.Host, mc.SMTP.Port, mc.SMTP.TLS = sm.Host, sm.Port, mail.TLSNone
	m := &mailer{cfg: mc}
	spec := report.Spec{Name: "weekly", Site: site, Schedule: "0 8 * * 1", Period: report.PeriodWeek, Zone: "Europe/Berlin", Top: 3,
		Receivers: []string{"email"}, To: []string{"ops@example.com"}}
	if err := report.Validate([]report.Spec{spec}, []string{"email"}); err != nil {
		t.Fatal(err)
	}
	newStage := func(name string) *report.Stage {
		s, err := report.New([]report.Spec{spec}, report.Deps{Counts: ch.Counts(), Deliver: m, Claims: claims, Name: name, Logger: logger, Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		s.RetryBase = 10 * time.Millisecond
		return s
	}
	at := utc("2026-11-23 07:00") // Monday 08:00 in Berlin
	fromMinutes, err := newStage("w1").Build(t.Context(), "weekly", at)
	if err != nil {
		t.Fatal(err)
	}
	// Once the days are sealed, old days are read from page_days: the
	// same report.
	if n, err := ch.Counts().SealDays(t.Context(), utc("2026-11-21 00:00")); err != nil || n == 0 {
		t.Fatalf("sealed %d days: %v", n, err)
	}
	// 2026-11-21 had no hits: complete as it is; 2026-11-22 is not sealed.
	if sb, err := ch.Counts().SealedBefore(t.Context(), at); err != nil || !sb.Equal(utc("2026-11-22 00:00")) {
		t.Fatalf("sealed before %s (%v), want 2026-11-22", sb, err)
	}
	r, err := newStage("w1").Build(t.Context(), "weekly", at)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, fromMinutes) {
		t.Errorf("from page_days:\n%+v\nfrom page_minutes:\n%+v", r, fromMinutes)
	}
	paths := func(ps []report.Page) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Path)
		}
		return strings.Join(out, " ")
	}
	for what, got := range map[string][2]string{
		"top":     {paths(r.Pages), "/d /a /b"},
		"risers":  {paths(r.Risers), "/a /c /m"},
		"fallers": {paths(r.Fallers), "/b /e"},
		"new":     {paths(r.New), "/a"},
	} {
		if got[0] != got[1] {
			t.Errorf("%s: %q, want %q", what, got[0], got[1])
		}
	}
	if r.Total != 117 || r.PrevTotal != 102 {
		t.Errorf("totals %d against %d, want 117 against 102", r.Total, r.PrevTotal)
	}
	if a := r.Pages[1]; a.Views != 30 || a.PrevViews != 4 || a.Rank != 2 || a.PrevRank != 4 {
		t.Errorf("/a: %+v", a)
	}
	if len(r.Milestones) != 1 || r.Milestones[0] != (report.Milestone{Path: "/m", Milestone: 1000, Total: 1002}) {
		t.Errorf("milestones: %+v", r.Milestones)
	}
	var days []uint64
	for _, bk := range r.Buckets {
		days = append(days, bk.Views)
	}
	if got, want := days, []uint64{30, 0, 40, 12, 15, 0, 20}; !equal(got, want) {
		t.Errorf("views per day %v, want %v", got, want)
	}

	// Sent once by two workers, after a failed attempt.
	m.fail.Store(1)
	n1, err1 := newStage("w1").Send(t.Context(), "weekly", at)
	n2, err2 := newStage("w2").Send(t.Context(), "weekly", at.Add(time.Hour))
	if err1 != nil || err2 != nil || n1+n2 != 1 {
		t.Fatalf("sends: %d (%v) and %d (%v), want one in all", n1, err1, n2, err2)
	}
	msg := sm.WaitForMessages(t, 1, 10*time.Second)[0]
	time.Sleep(200 * time.Millisecond)
	if n := len(sm.Messages()); n != 1 {
		t.Fatalf("%d report mails, want 1", n)
	}
	data := string(msg.Data)
	parsed, err := netmail.ReadMessage(strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(parsed.Header.Get("Subject"))
	if want := "[pagewatch] Weekly report for example.com: 2026-11-16 – 2026-11-22"; subject != want {
		t.Errorf("subject %q, want %q", subject, want)
	}
	if !strings.Contains(data, "image/png") {
		t.Error("no chart")
	}
	text := decodeQP(data)
	for _, want := range []string{
		"117 views on example.com (2026-11-16 =E2=80=93 2026-11-22): +15% on the week before (102).",
		"   2.           30   +650%  /a",
		"          30  was            4  /a",
		"          20  was           50  /b",
		"  #2  /a",
		"       1,000  /m (1,002 views all time)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// decodeQP undoes quoted-printable soft breaks and =3D, enough to read
// the text part.
func decodeQP(s string) string {
	s = strings.ReplaceAll(s, "=\r\n", "")
	return strings.ReplaceAll(s, "=3D", "=")
}

// counter counts deliveries per receiver.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) DeliverReport(_ context.Context, receiver string, _ []string, r report.Report) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[receiver+" "+r.Key]++
	return nil
}

// get is how many receiver got, and the most it got of one period's.
func (c *counter) get(receiver string) (all, most int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.n {
		if strings.HasPrefix(k, receiver+" ") {
			all, most = all+n, max(most, n)
		}
	}
	return all, most
}

// Two workers run a schedule that fires every second: each receiver gets
// the day's report once.
func TestScheduleSendsOncePerPeriod(t *testing.T) {
	logger := testenv.Logger(t)
	b, _ := testenv.NATS(t, logger)
	ch, _ := testenv.ClickHouse(t, logger)
	claims, err := b.KV(t.Context(), bus.BucketReports, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	spec := report.Spec{Name: "daily", Site: "example.com", Schedule: "* * * * * *", Period: report.PeriodDay, Receivers: []string{"email", "slack"}}
	c := &counter{n: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, name := range []string{"w1", "w2"} {
		s, err := report.New([]report.Spec{spec}, report.Deps{Counts: ch.Counts(), Deliver: c, Claims: claims, Name: name, Logger: logger, Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.Run(ctx) }()
	}
	testcheck.Eventually(t, 15*time.Second, "both receivers' report", func() bool {
		e, _ := c.get("email")
		s, _ := c.get("slack")
		return e > 0 && s > 0
	})
	time.Sleep(2500 * time.Millisecond) // two more firings of each schedule
	cancel()
	wg.Wait()
	// Once per period: twice only if the test ran across a UTC midnight.
	for _, r := range []string{"email", "slack"} {
		if all, most := c.get(r); most != 1 || all > 2 {
			t.Fatalf("%s got %d reports, up to %d of one period; want one per period", r, all, most)
		}
	}
}

// A worker starting after a report's firing, with no worker running then,
// sends it if the firing was under 6 hours ago.
func TestCatchUpAtStart(t *testing.T) {
	logger := testenv.Logger(t)
	b, _ := testenv.NATS(t, logger)
	ch, _ := testenv.ClickHouse(t, logger)
	claims, err := b.KV(t.Context(), bus.BucketReports, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	spec := report.Spec{Name: "daily", Site: "example.com", Schedule: "0 8 * * *", Period: report.PeriodDay, Receivers: []string{"email"}}
	for _, c := range []struct {
		start string
		want  int
	}{
		{"2026-11-24 07:59", 0}, // before the firing
		{"2026-11-24 09:00", 1}, // an hour late: sent
		{"2026-11-24 10:00", 0}, // again: the claim holds
		{"2026-11-25 15:00", 0}, // seven hours late: left
	} {
		at := utc(c.start)
		cnt := &counter{n: map[string]int{}}
		s, err := report.New([]report.Spec{spec}, report.Deps{Counts: ch.Counts(), Deliver: cnt, Claims: claims, Name: "w", Logger: logger,
			Registry: prometheus.NewRegistry(), Clock: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		_ = s.Run(ctx)
		cancel()
		if all, _ := cnt.get("email"); all != c.want {
			t.Errorf("started at %s: %d sent, want %d", c.start, all, c.want)
		}
	}
}
