package nabeval

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

func at(s string) time.Time {
	t, err := time.Parse(time.DateTime, s)
	if err != nil {
		panic(err)
	}
	return t
}

// The README's counting: the probationary 15% (of 100 rows: NAB's code
// caps it at 750) is skipped (its alarms
// neither catch nor are false alarms, and a window inside it cannot be
// caught), alarms under an hour apart are one episode, resolves are no
// alarms, and an alarm belongs to the row it was judged on.
func TestScoreCountsAsTheREADMESays(t *testing.T) {
	s := Series{Name: "x.csv"}
	for i := 0; i < 100; i++ {
		s.Times = append(s.Times, at("2015-03-01 00:00:30").Add(time.Duration(i)*time.Hour))
		s.Values = append(s.Values, 1)
	}
	// Probation ends at row 15, 15:00:30.
	s.Windows = [][2]time.Time{{at("2015-03-01 05:00:30"), at("2015-03-01 08:00:30")}, {at("2015-03-02 12:00:30"), at("2015-03-02 20:00:30")}, {at("2015-03-04 00:00:30"), at("2015-03-04 01:00:30")}}
	lines := []string{
		`{"path":"/x","fired_at":"2015-03-01T02:00:59Z","kind":"fire"}`,     // probation, outside: skipped
		`{"path":"/x","fired_at":"2015-03-01T06:00:59Z","kind":"fire"}`,     // probation, inside window 1: skipped
		`{"path":"/x","fired_at":"2015-03-01T14:30:00Z","kind":"fire"}`,     // probation: skipped...
		`{"path":"/x","fired_at":"2015-03-01T15:10:00Z","kind":"fire"}`,     // ...so this starts an episode: false alarm
		`{"path":"/x","fired_at":"2015-03-02T02:00:59Z","kind":"fire"}`,     // false alarm
		`{"path":"/x","fired_at":"2015-03-02T02:30:59Z","kind":"escalate"}`, // same episode
		`{"path":"/x","fired_at":"2015-03-02T11:59:59Z","kind":"fire"}`,     // row 11:00:30, before window 2: false alarm
		`{"path":"/x","fired_at":"2015-03-02T13:00:59Z","kind":"escalate"}`, // catches window 2
		`{"path":"/x","fired_at":"2015-03-03T13:00:59Z","kind":"resolve"}`,  // no alarm
		`{"path":"/x","fired_at":"2015-03-04T01:00:59Z","kind":"fire"}`,     // row 01:00:30, the window's last: catches window 3
		`{"path":"/y","fired_at":"2015-03-04T00:30:59Z","kind":"fire"}`,     // another page
		`{"path":"/x","fired_at":"2015-03-05T04:00:30Z","kind":"fire"}`,     // when row 100 would begin: after the last row, left out
	}
	alarms, err := ReadAlarms(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	sc := ScoreSeries(s, alarms)
	want := Score{Name: "x.csv", Caught: 2, Windows: 3, InProbation: 1, FalseAlarms: 3, Weeks: sc.Weeks, Alarms: 6, AfterEnd: 1}
	if sc != want {
		t.Errorf("score %+v\nwant  %+v", sc, want)
	}
	// As counted before 2026-12-06: the alarm after the end at the last
	// row (03:00:30), a false alarm of its own.
	if sc := ScoreSeriesEndClamped(s, alarms); sc.FalseAlarms != 4 || sc.Alarms != 7 || sc.AfterEnd != 0 {
		t.Errorf("clamped to the last row: %+v, want 4 false alarms of 7", sc)
	}
	// An alarm within the last row's hour is judged on it.
	lastHour := append(slices.Clone(alarms), Alarm{Path: "/x", FiredAt: at("2015-03-05 03:59:59"), Kind: "fire"})
	if sc := ScoreSeries(s, lastHour); sc.FalseAlarms != 4 || sc.AfterEnd != 1 {
		t.Errorf("an alarm in the last row's hour: %+v, want it a false alarm", sc)
	}
}

// NAB's code caps the probationary period at 750 rows (15% of 5,000):
// a series of 10,000 rows skips 750, not 1,500; the README's "first 15%"
// read literally skips 1,500.
func TestProbationAsNABsCodeSetsIt(t *testing.T) {
	s := Series{Name: "x.csv"}
	for i := 0; i < 10000; i++ {
		s.Times = append(s.Times, at("2015-03-01 00:00:30").Add(time.Duration(i)*5*time.Minute))
		s.Values = append(s.Values, 1)
	}
	if got, want := s.ProbationEnd(), s.Times[750]; !got.Equal(want) {
		t.Errorf("probation ends %v, want row 750 (%v)", got, want)
	}
	if got, want := s.LiteralProbationEnd(), s.Times[1500]; !got.Equal(want) {
		t.Errorf("literal probation ends %v, want row 1500 (%v)", got, want)
	}
	// An alarm at row 1000 catches a window there under NAB's code, and is
	// skipped under the literal 15%.
	s.Windows = [][2]time.Time{{s.Times[990], s.Times[1010]}}
	alarms := []Alarm{{Path: "/x", FiredAt: s.Times[1000].Add(30 * time.Second), Kind: "fire"}}
	if sc := ScoreSeries(s, alarms); sc.Caught != 1 || sc.InProbation != 0 {
		t.Errorf("NAB's code: %+v, want the window caught", sc)
	}
	if sc := ScoreSeriesLiteral(s, alarms); sc.Caught != 0 || sc.InProbation != 1 || sc.Alarms != 0 {
		t.Errorf("literal 15%%: %+v, want the window in the probation", sc)
	}
}

func TestLoadsTheRealSeries(t *testing.T) {
	ss, err := Load(realdata.Path(t, "nab-tweets"))
	if err != nil {
		t.Fatal(err)
	}
	windows := 0
	for _, s := range ss {
		windows += len(s.Windows)
	}
	if len(ss) != 10 || windows != 33 {
		t.Fatalf("%d series, %d windows; want 10 and 33", len(ss), windows)
	}
	var b bytes.Buffer
	if err := WriteCounts(&b, ss[:1]); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "timestamp,site,path,count\n2015-02-26T21:42:53Z,nab.example,/Twitter_volume_AAPL,104\n") {
		t.Errorf("counts file starts %q", b.String()[:120])
	}
}

// The shipped default, replayed in process as `make eval` replays it
// through the sweeper, scores what docs/spike-rules.md says: a change to
// the rules or the spike logic that moves it must update the page.
func TestShippedDefaultScoresAsDocumented(t *testing.T) {
	const (
		wantCaught, wantFalse               = 30, 22 // NAB's code's probation: the headline
		wantCaughtLiteral, wantFalseLiteral = 22, 18 // the first 15%
		wantAfterEnd, wantFalseClamped      = 3, 24  // after a series' last row; counted there
		wantUp, wantDown                    = 63, 4  // alarms per direction, make eval's lines
	)
	ss, err := Load(realdata.Path(t, "nab-tweets"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteCounts(&b, ss); err != nil {
		t.Fatal(err)
	}
	cf, err := sweep.ReadCounts(&b, "counts.csv")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := sweep.LoadRules(sweep.Config{RulesPath: "../../deploy/rules/spike-default.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	xs, err := sweep.Backtest(context.Background(), cf, rs, cf.First, cf.Last.Add(time.Minute), testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	var alarms []Alarm
	for _, x := range xs {
		if x.Event != "resolve" {
			dir := ""
			if x.Why != nil {
				dir = x.Why.Direction
			}
			alarms = append(alarms, Alarm{Rule: x.Rule, Site: x.Site, Path: x.Path, FiredAt: x.CrossedAt, Kind: x.Event, Direction: dir})
		}
	}
	// The headline: NAB's code's probation (at most 750 rows); and the
	// README's "first 15%" read literally, printed above it.
	var scores, literal []Score
	fa, faLiteral := 0, 0
	for _, s := range ss {
		sc := ScoreSeries(s, alarms)
		scores = append(scores, sc)
		fa += sc.FalseAlarms
		sl := ScoreSeriesLiteral(s, alarms)
		literal = append(literal, sl)
		faLiteral += sl.FalseAlarms
	}
	caught, windows, perWeek := Total(scores)
	afterEnd, faClamped := 0, 0
	for i, s := range ss {
		afterEnd += scores[i].AfterEnd
		faClamped += ScoreSeriesEndClamped(s, alarms).FalseAlarms
	}
	if afterEnd != wantAfterEnd || faClamped != wantFalseClamped {
		t.Errorf("%d alarms after their series' last row, %d false alarms counting them there; docs/unusual-rules.md says %d and %d", afterEnd, faClamped, wantAfterEnd, wantFalseClamped)
	}
	if caught != wantCaught || windows != 33 || fa != wantFalse || perWeek > 0.5 {
		t.Errorf("caught %d/%d, %d false alarms (%.2f per series-week); docs/spike-rules.md says %d/33 and %d", caught, windows, fa, perWeek, wantCaught, wantFalse)
	}
	// The windows are surges: what looks down adds only false alarms. (A
	// drop may fall inside a window, as the Twitter collection's hole of
	// 11 March falls in AMZN's window of that day, which its surge that
	// evening catches; it adds no window the surges do not catch.)
	var up []Score
	for _, s := range ss {
		up = append(up, ScoreSeries(s, OfDirection(alarms, "up")))
	}
	if up, dn := len(OfDirection(alarms, "up")), len(OfDirection(alarms, "down")); up != wantUp || dn != wantDown {
		t.Errorf("%d alarms up, %d down; docs/unusual-rules.md says %d and %d", up, dn, wantUp, wantDown)
	}
	if c, _, _ := Total(up); c != caught {
		t.Errorf("alarms up caught %d windows, all %d: the drops caught what no surge did, but the tweets' windows are surges", c, caught)
	}
	caught, windows, perWeek = Total(literal)
	if caught != wantCaughtLiteral || windows != 33 || faLiteral != wantFalseLiteral {
		t.Errorf("literal 15%%: caught %d/%d, %d false alarms (%.2f per series-week); docs/spike-rules.md says %d/33 and %d", caught, windows, faLiteral, perWeek, wantCaughtLiteral, wantFalseLiteral)
	}
}
