package backtest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/sweep/backtest"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for s, want := range map[string]time.Time{
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"36h":                  now.Add(-36 * time.Hour),
		"2026-11-01T00:00:00Z": time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := backtest.ParseSince(s, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"yesterday", "0d", "-1h", ""} {
		if _, err := backtest.ParseSince(s, now); err == nil {
			t.Errorf("ParseSince(%q) took it", s)
		}
	}
}

// The command's usage errors (a bad flag or counts file) are InputErrors,
// named by their flag.
func TestBadInputIsAnInputError(t *testing.T) {
	var in *backtest.InputError
	if err := (backtest.Query{Format: "xml"}).Check(); !errors.As(err, &in) || !strings.HasPrefix(err.Error(), "--format:") {
		t.Errorf("--format xml: %v", err)
	}
	if _, err := (backtest.Query{Since: "yesterday"}).From(time.Now()); !errors.As(err, &in) || !strings.HasPrefix(err.Error(), "--since:") {
		t.Errorf("--since yesterday: %v", err)
	}
	q := backtest.Query{Counts: filepath.Join(t.TempDir(), "missing.csv"), Format: "text"}
	if _, _, err := q.File(context.Background(), nil, nil); !errors.As(err, &in) || !strings.HasPrefix(err.Error(), "--counts:") {
		t.Errorf("a missing counts file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("timestamp,site,path,count\nnot a time,example.com,/,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q.Counts = bad
	if _, _, err := q.File(context.Background(), nil, nil); !errors.As(err, &in) || !strings.HasPrefix(err.Error(), "--counts:") {
		t.Errorf("a bad counts file: %v", err)
	}
}

func TestPrintSummarisesPerRule(t *testing.T) {
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	xs := []crossing.Crossing{
		{Rule: "pricing", Site: "example.com", Path: "/pricing", CrossedAt: at, Threshold: 100, Count: 120, Window: "1h", Key: "k1"},
		{Rule: "blog", Site: "example.com", Path: "/blog/\x1b[31m", CrossedAt: at, Threshold: 10, Count: 11, Window: "1h", Key: "k2"},
		{Rule: "pricing", Site: "example.com", Path: "/pricing", CrossedAt: at.Add(time.Hour), Threshold: 100, Count: 130, Window: "1h", Key: "k3"},
	}
	var out bytes.Buffer
	if err := (backtest.Query{Format: "text"}).Print(&out, xs, at.Add(-time.Hour), 0); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"CROSSED AT", `"/blog/\x1b[31m"`, "since 2026-11-24T11:00:00Z: 3 crossing(s); blog 1; pricing 2\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("text output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "learnt") {
		t.Errorf("rules that remember nothing, but the output says they learnt:\n%s", s)
	}
	// An unusual rule's backtest says what it learnt before since, and
	// why an episode may show only its resolve.
	out.Reset()
	learnt := backtest.Learnt([]rules.Rule{{Name: "pricing"}, {Name: "unusual", Unusual: &rules.Unusual{}}})
	if err := (backtest.Query{Format: "text"}).Print(&out, xs, at.Add(-time.Hour), learnt); err != nil {
		t.Fatal(err)
	}
	if want := "unusual rules learnt what their pages remember (bursts, launches, an open episode, a new level) from the 40 days before, as far as the data goes, unreported"; !strings.Contains(out.String(), want) {
		t.Errorf("text output lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	if err := (backtest.Query{Format: "json"}).Print(&out, xs[:1], at, 0); err != nil {
		t.Fatal(err)
	}
	if want := `{"rule":"pricing","site":"example.com","path":"/pricing","fired_at":"2026-11-24T12:00:00Z","kind":"fire","count":120,"baseline":null,"key":"k1"}` + "\n"; out.String() != want {
		t.Errorf("json output:\n%s\nwant\n%s", out.String(), want)
	}

	// A message that fired on a burst gives the burst's minutes too.
	burst := crossing.Crossing{Rule: "unusual", Site: "example.com", Path: "/pricing", CrossedAt: at, Count: 28, Window: "1h", Key: "k4", Event: "fire",
		Why: &crossing.Why{Kind: "unusual", Baseline: 10, Low: 1, High: 29, Direction: "up",
			Burst: 10 * time.Minute, BurstCount: 20, BurstBaseline: 1.5, BurstLow: 0, BurstHigh: 5}}
	out.Reset()
	if err := (backtest.Query{Format: "json"}).Print(&out, []crossing.Crossing{burst}, at, 0); err != nil {
		t.Fatal(err)
	}
	if want := `{"rule":"unusual","site":"example.com","path":"/pricing","fired_at":"2026-11-24T12:00:00Z","kind":"fire","count":28,"baseline":10,"expected":10,"low":1,"high":29,"direction":"up",` +
		`"burst":{"minutes":10,"count":20,"expected":1.5,"low":0,"high":5},"key":"k4"}` + "\n"; out.String() != want {
		t.Errorf("json output of a burst:\n%s\nwant\n%s", out.String(), want)
	}
}

// The table says which way a page went and what its count was measured
// against: a threshold, the page's usual range, and the burst of minutes
// a message fired on, not a threshold column a burst never passed.
func TestTableSaysTheEventAndWhatItWasMeasuredAgainst(t *testing.T) {
	at := time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC)
	xs := []crossing.Crossing{
		{Rule: "pricing", Path: "/pricing", CrossedAt: at, Threshold: 1000, Count: 1200, Window: "1h", Key: "k1"},
		{Rule: "unusual", Path: "/a", CrossedAt: at, Threshold: 29, Count: 28, Window: "1h", Key: "k2",
			Why: &crossing.Why{Kind: "unusual", Direction: "up", Low: 1, High: 29, Baseline: 12,
				Burst: 10 * time.Minute, BurstCount: 20, BurstLow: 0, BurstHigh: 3}},
		{Rule: "unusual", Path: "/b", CrossedAt: at, Event: "resolve", Count: 150, Window: "1h", Key: "k3",
			Why: &crossing.Why{Kind: "unusual", Direction: "down", Low: 120, High: 180, Baseline: 150}},
		{Rule: "unusual", Site: "example.com", CrossedAt: at, Key: "k4",
			Why: &crossing.Why{Kind: crossing.KindNoData, Since: at.Add(-3 * time.Hour)}},
	}
	var b bytes.Buffer
	backtest.PrintCrossings(&b, xs)
	lines := strings.Split(b.String(), "\n")
	for i, want := range [][]string{
		{"EVENT", "AGAINST"},
		{"fire", "threshold 1000"},
		{"fire up", "expected 1–29; fired on 20 views in 10 minutes, expected 0–3"},
		{"resolve down", "expected 120–180"},
		{"no data", "no data since 2026-11-24T08:00:00Z"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d = %q; want %q in it", i, lines[i], w)
			}
		}
	}
}
