package ratelimit

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestScheduleNeverExceeds drives schedule with random arrival times,
// including clocks that jump back (another worker's skewed clock), and
// checks the bound the package promises: any span of length W holds at
// most Burst + W/T send times.
func TestScheduleNeverExceeds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, l := range []Limit{
		{Rate: 10, Per: time.Second, Burst: 1},
		{Rate: 10, Per: time.Second, Burst: 20},
		{Rate: 20, Per: time.Hour, Burst: 5},
		{Rate: 7, Per: 3 * time.Second, Burst: 3},
	} {
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var tat time.Time
		var ats []time.Time
		now := base
		for range 2000 {
			// Mostly forward, in bursts; sometimes a clock 2 intervals behind.
			now = now.Add(time.Duration(rng.Int64N(int64(l.interval()) * 2)))
			if rng.IntN(4) == 0 {
				now = now.Add(-time.Duration(rng.Int64N(int64(l.interval()) * 2)))
			}
			reqNow := now
			for range rng.IntN(l.Burst + 3) {
				at, next := schedule(tat, reqNow, l)
				if at.Before(reqNow) {
					t.Fatalf("%s: slot %s before now %s", l, at, reqNow)
				}
				if !next.After(tat) {
					t.Fatalf("%s: TAT did not move: %s -> %s", l, tat, next)
				}
				tat = next
				ats = append(ats, at)
			}
		}
		if err := windowViolation(l, ats); err != nil {
			t.Fatal(err)
		}
	}
}

// windowViolation describes a span holding more than Burst + W/T slots,
// or returns nil. For sorted slots a[0..n) the bound is, for all i < j,
// (j-i+1-Burst)*T <= a[j]-a[i], i.e. f(j) >= f(i) - (Burst-1)*T with
// f(k) = a[k] - k*T: one pass keeping the largest f so far.
func windowViolation(l Limit, ats []time.Time) error {
	ats = append([]time.Time(nil), ats...)
	sort.Slice(ats, func(i, j int) bool { return ats[i].Before(ats[j]) })
	T := l.interval()
	tau := time.Duration(l.Burst-1) * T
	var maxF time.Duration
	maxI := 0
	for k, at := range ats {
		f := at.Sub(ats[0]) - time.Duration(k)*T
		if k > 0 && f < maxF-tau {
			span := at.Sub(ats[maxI])
			return fmt.Errorf("%s: %d slots within %s (from %s), at most %d allowed",
				l, k-maxI+1, span, ats[maxI].Format(time.RFC3339Nano), l.Burst+int(span/T))
		}
		if k == 0 || f > maxF {
			maxF, maxI = f, k
		}
	}
	return nil
}

func TestLimitValidate(t *testing.T) {
	for _, tc := range []struct {
		l    Limit
		want string // "" for valid; else a substring of the error
	}{
		{Limit{}, ""},
		{Limit{Rate: 10, Per: time.Second, Burst: 20}, ""},
		{Limit{Rate: 20, Per: time.Hour, Burst: 5}, ""},
		{Limit{Rate: 0, Per: time.Second, Burst: 1}, "x.rate: must be 1..1000000"},
		{Limit{Rate: 1, Per: 0, Burst: 1}, "x.per: must be"},
		{Limit{Rate: 1, Per: time.Second}, "x.burst: must be"},
		{Limit{Rate: 1_000_000, Per: 100 * time.Millisecond, Burst: 1}, "more than one a microsecond"},
		{Limit{Rate: 1, Per: 30 * 24 * time.Hour, Burst: 1}, "x.per: must be"},
	} {
		err := tc.l.Validate("x")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.l, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: got %v, want %q", tc.l, err, tc.want)
		}
	}
	if err := DefaultConfig().Validate("worker.rate_limit"); err != nil {
		t.Fatal(err)
	}
	bad := DefaultConfig()
	bad.PerRecipient.Burst = 0
	if err := bad.Validate("worker.rate_limit"); err == nil || !strings.Contains(err.Error(), "worker.rate_limit.per_recipient.burst") {
		t.Fatalf("got %v, want an error naming worker.rate_limit.per_recipient.burst", err)
	}
}

func TestRecipientKey(t *testing.T) {
	a := Recipient("Ops Team <OPS@Example.com>")
	if b := Recipient(" ops@example.com "); a != b {
		t.Fatalf("%v != %v", a, b)
	}
	if a == Recipient("dev@example.com") {
		t.Fatal("two addresses share a key")
	}
	for _, c := range a.String() {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.') {
			t.Fatalf("key %q has %q", a, c)
		}
	}
	if Global().String() != "global" {
		t.Fatal(Global().String())
	}
}

func TestStateRoundTrip(t *testing.T) {
	st := state{TAT: time.Date(2026, 5, 1, 12, 0, 0, 123, time.UTC), Now: time.Date(2026, 5, 1, 11, 59, 0, 0, time.UTC)}
	got, err := decodeState(st.encode())
	if err != nil || !got.TAT.Equal(st.TAT) || !got.Now.Equal(st.Now) {
		t.Fatalf("%+v, %v", got, err)
	}
	for _, b := range []string{"", "{}", "garbage", `{"tat":"yesterday"}`} {
		if _, err := decodeState([]byte(b)); err == nil {
			t.Errorf("%q decoded", b)
		}
	}
}

// TestWindowViolation: the checker itself finds too-close slots.
func TestWindowViolation(t *testing.T) {
	l := Limit{Rate: 10, Per: time.Second, Burst: 2} // T = 100ms
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	for _, tc := range []struct {
		ats []int
		ok  bool
	}{
		{[]int{0, 0, 100, 200, 300}, true},
		{[]int{500, 0, 300, 0, 100, 200}, true},
		{[]int{0, 0, 0}, false},
		{[]int{0, 0, 99}, false},
		{[]int{0, 0, 100, 200, 299}, false},
		{[]int{0, 150, 150, 250, 300}, false}, // 4 within 150ms..300ms
	} {
		err := windowViolation(l, at(tc.ats...))
		if (err == nil) != tc.ok {
			t.Errorf("%v: %v, want ok=%v", tc.ats, err, tc.ok)
		}
	}
}
