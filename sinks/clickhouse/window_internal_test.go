package clickhouse

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Every minute of a window is read from exactly one table: from page_days
// as part of a whole sealed day inside the window, or from page_minutes.
// Checked minute by minute for random starts, ends and seal boundaries,
// aligned to days and not.
func TestPlanWindowsCoversEachMinuteOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Unix()
	// A time within 6 days of base: a midnight, a minute or any second.
	at := func() int64 {
		s := base + rng.Int64N(6*secondsPerDay)
		switch rng.IntN(3) {
		case 0:
			return floorDay(s)
		case 1:
			return s - s%60
		}
		return s
	}
	for i := 0; i < 2000; i++ {
		q := traffic.WindowQuery{End: time.Unix(at(), 0)}
		if rng.IntN(5) > 0 {
			q.SealedBefore = time.Unix(at(), 0)
		}
		for n := 1 + rng.IntN(4); n > 0; n-- {
			if rng.IntN(4) == 0 {
				q.Starts = append(q.Starts, time.Time{})
			} else {
				q.Starts = append(q.Starts, time.Unix(at(), 0))
			}
		}
		p, err := planWindows(q)
		if err != nil {
			t.Fatal(err)
		}
		if p.sealedTo%secondsPerDay != 0 || p.sealedTo > q.End.Unix() {
			t.Fatalf("%+v: sealedTo %d", q, p.sealedTo)
		}
		for j, sp := range p.starts {
			var start int64
			if !q.Starts[j].IsZero() {
				start = q.Starts[j].Unix()
			}
			if sp.sealed && sp.from%secondsPerDay != 0 {
				t.Fatalf("%+v start %d: sealed from %d, not a midnight", q, j, sp.from)
			}
			// Minutes from two days before base: all-time windows reach
			// them, and no hit can be older in this test.
			for m := base - 2*secondsPerDay; m < base+7*secondsPerDay; m += 60 {
				want := 0
				if m >= start && m < q.End.Unix() {
					want = 1
				}
				got := 0
				if d := floorDay(m); sp.sealed && d >= sp.from && d < p.sealedTo {
					got++
				}
				for _, r := range sp.live {
					if m >= r.from && m < r.to {
						got++
					}
				}
				if got != want {
					t.Fatalf("%+v start %d (%d): minute %d read %d times, want %d (plan %+v, sealedTo %d)", q, j, start, m, got, want, sp, p.sealedTo)
				}
			}
		}
	}
}

func TestPlanWindowsNeedsAStart(t *testing.T) {
	if _, err := planWindows(traffic.WindowQuery{End: time.Now()}); err == nil {
		t.Fatal("a query without starts was planned")
	}
}

func TestMergeSpans(t *testing.T) {
	got := mergeSpans([]timeSpan{{5, 9}, {0, 2}, {2, 3}, {8, 12}, {20, 21}})
	want := []timeSpan{{0, 3}, {5, 12}, {20, 21}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
