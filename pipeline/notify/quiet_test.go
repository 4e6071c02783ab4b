package notify_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

func at(t *testing.T, loc *time.Location, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Quiet hours are wall-clock times in their zone: the night of a DST
// change is an hour shorter (spring) or longer (autumn), and a start in
// the skipped hour falls an hour later.
func TestQuietHoursAcrossDST(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	night := notify.QuietHours{Start: "22:00", End: "07:00", TimeZone: "Europe/Berlin"}
	cases := []struct {
		q          notify.QuietHours
		t          string
		in         bool
		start, end string // local
		hours      float64
	}{
		{night, "2026-03-28 23:30", true, "2026-03-28 22:00", "2026-03-29 07:00", 8},  // spring forward: 8 h
		{night, "2026-10-25 02:30", true, "2026-10-24 22:00", "2026-10-25 07:00", 10}, // fall back: 10 h
		{night, "2026-03-29 07:00", false, "", "", 0},
		{night, "2026-03-29 06:59", true, "2026-03-28 22:00", "2026-03-29 07:00", 8},
		{night, "2026-03-29 21:59", false, "", "", 0},
		// 02:30 does not exist on 2026-03-29: the quiet hours start at 03:30.
		{notify.QuietHours{Start: "02:30", End: "05:00", TimeZone: "Europe/Berlin"}, "2026-03-29 03:15", false, "", "", 0},
		{notify.QuietHours{Start: "02:30", End: "05:00", TimeZone: "Europe/Berlin"}, "2026-03-29 03:45", true, "2026-03-29 03:30", "2026-03-29 05:00", 1.5},
		// Days: the quiet hours of Saturday night run into Sunday.
		{notify.QuietHours{Start: "20:00", End: "08:00", Days: []string{"sat"}, TimeZone: "Europe/Berlin"}, "2026-03-29 07:00", true, "2026-03-28 20:00", "2026-03-29 08:00", 11},
		{notify.QuietHours{Start: "20:00", End: "08:00", Days: []string{"sat"}, TimeZone: "Europe/Berlin"}, "2026-03-29 21:00", false, "", "", 0},
	}
	for _, c := range cases {
		tt := at(t, berlin, c.t)
		start, end, in := c.q.Period(tt)
		if in != c.in {
			t.Errorf("%v at %s: in %v, want %v", c.q, c.t, in, c.in)
			continue
		}
		if !in {
			continue
		}
		if got := start.In(berlin).Format("2006-01-02 15:04"); got != c.start {
			t.Errorf("%v at %s: start %s, want %s", c.q, c.t, got, c.start)
		}
		if got := end.In(berlin).Format("2006-01-02 15:04"); got != c.end {
			t.Errorf("%v at %s: end %s, want %s", c.q, c.t, got, c.end)
		}
		if h := end.Sub(start).Hours(); h != c.hours {
			t.Errorf("%v at %s: %v hours long, want %v", c.q, c.t, h, c.hours)
		}
	}
}

// captureReceiver keeps what it was sent.
type captureReceiver struct {
	mu   sync.Mutex
	sent []notify.Notification
}

func (c *captureReceiver) Send(_ context.Context, n notify.Notification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, n)
	return nil
}

func (c *captureReceiver) all() []notify.Notification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]notify.Notification(nil), c.sent...)
}

// A receiver quiet 01:00–04:00 in Berlin on the night clocks spring
// forward (two real hours): crossings inside are held, recorded as held,
// and sent as one digest once it is 04:00 CEST (02:00 UTC), not at 04:00
// CET; a crossing after that goes straight out; email, not quiet, gets
// everything at once.
func TestQuietHoursHoldThenDigestAcrossDST(t *testing.T) {
	b := setup(t)
	var now atomic.Int64
	set := func(s string) { now.Store(time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC).Add(mustDur(t, s)).UnixNano()) }
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	set("30m") // 01:30 CET
	quiet := &captureReceiver{}
	specs := []notify.ReceiverSpec{b.emailSpec(), {Name: "night", Kind: notify.KindOther,
		Open:  func() (notify.Receiver, error) { return quiet, nil },
		Quiet: notify.QuietHours{Start: "01:00", End: "04:00", TimeZone: "Europe/Berlin"}}}
	cfg := b.cfg
	cfg.Routing = notify.Routing{Receivers: []string{"email", "night"}}
	for i := 0; i < 3; i++ {
		x := job(i)
		b.publish(t, x, x.Key)
	}
	b.runWorker(t, cfg, specs, clock)
	b.smtp.WaitForMessages(t, 3, 15*time.Second)
	testcheck.Eventually(t, 10*time.Second, "three held crossings in the history", func() error {
		got := b.chSrv.Query(t, "SELECT count() FROM pagewatch.notifications WHERE outcome = 'held'")
		if got != "3\n" {
			return fmt.Errorf("%q", got)
		}
		return nil
	})
	set("1h59m") // 03:59 CEST: the hour from 02:00 to 03:00 did not happen
	time.Sleep(2500 * time.Millisecond)
	if n := len(quiet.all()); n != 0 {
		t.Fatalf("%d sent before the quiet hours ended", n)
	}
	set("2h") // 04:00 CEST
	testcheck.Eventually(t, 10*time.Second, "the digest", func() error {
		if n := len(quiet.all()); n != 1 {
			return fmt.Errorf("%d sent", n)
		}
		return nil
	})
	d := quiet.all()[0]
	if d.DigestTotal != 3 || len(d.Digest) != 3 || !strings.Contains(d.Subject, "3 crossings during quiet hours") {
		t.Errorf("digest: total %d, %d items, subject %q", d.DigestTotal, len(d.Digest), d.Subject)
	}
	x := job(3)
	b.publish(t, x, x.Key)
	testcheck.Eventually(t, 10*time.Second, "the crossing after the quiet hours", func() error {
		if all := quiet.all(); len(all) != 2 || all[1].Key != x.Key {
			return fmt.Errorf("%d sent", len(all))
		}
		return nil
	})
	time.Sleep(1500 * time.Millisecond) // a second digest?
	if n := len(quiet.all()); n != 2 {
		t.Errorf("%d sent, want the digest and one crossing", n)
	}
}

func mustDur(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
