package demotraffic

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/democlock"
)

// end is a Wednesday; New puts it at 14:00-15:00 on the audience's clock.
var end = time.Date(2026, 5, 6, 9, 30, 0, 0, time.UTC)

func TestMinuteIsDeterministic(t *testing.T) {
	a, b := New(end, 7, 1), New(end, 7, 1)
	at := end.Add(-50 * time.Hour)
	if got, want := join(a.Minute(at)), join(b.Minute(at)); got != want || got == "" {
		t.Fatalf("the same minute differs, or is empty:\n%s\n---\n%s", got, want)
	}
	if join(New(end, 8, 1).Minute(at)) == join(a.Minute(at)) {
		t.Error("another seed gives the same lines")
	}
}

// views counts the page views (status 200, no crawler) in the hour from
// at, on every page or on path.
func views(s *Site, at time.Time, path string) int {
	n := 0
	for m := range 60 {
		for _, l := range s.Minute(at.Add(time.Duration(m) * time.Minute)) {
			if !l.Crawler && strings.Contains(l.Text, "\" 200 ") && (path == "" || strings.Contains(l.Text, "GET "+path+" ") || strings.Contains(l.Text, "GET "+path+"?")) {
				n++
			}
		}
	}
	return n
}

func TestRhythmHolidayAndCrawlers(t *testing.T) {
	s := New(end, 27, 1)
	afternoon := end.Add(-7 * 24 * time.Hour).Truncate(time.Hour) // last Wednesday, 14:00 for the audience
	night := afternoon.Add(-10 * time.Hour)
	saturday := afternoon.Add(3 * 24 * time.Hour)
	day, aft, sat := views(s, afternoon, ""), views(s, night, ""), views(s, saturday, "")
	t.Logf("views an hour: Wednesday afternoon %d, its night %d, Saturday afternoon %d", day, aft, sat)
	if day < 1300 || day > 2100 || aft*4 > day || sat > day*3/4 {
		t.Errorf("no daily and weekly rhythm: afternoon %d, night %d, Saturday %d", day, aft, sat)
	}
	hol := s.holiday.Add(-s.offset).Add(14 * time.Hour)
	normal := hol.Add(-7 * 24 * time.Hour)
	if h, n := views(s, hol, ""), views(s, normal, ""); h*2 > n {
		t.Errorf("the holiday (%s) has %d views at 14:00, the same day a week before %d", s.holiday.Format("Mon 2 Jan"), h, n)
	}
	var lines, crawlers int
	ai := map[string]bool{}
	for m := range 24 * 60 {
		for _, l := range s.Minute(afternoon.Add(time.Duration(m) * time.Minute)) {
			lines++
			if l.Crawler {
				crawlers++
				for _, bot := range []string{"GPTBot", "ClaudeBot", "PerplexityBot", "ChatGPT-User"} {
					ai[bot] = ai[bot] || strings.Contains(l.Text, bot)
				}
			}
		}
	}
	if share := float64(crawlers) / float64(lines); share < 0.10 || share > 0.20 {
		t.Errorf("crawlers write %.0f%% of a day's %d lines, want 10-20%%", 100*share, lines)
	}
	if len(ai) != 4 || !ai["GPTBot"] || !ai["ChatGPT-User"] {
		t.Errorf("AI crawlers and agents seen: %v", ai)
	}
}

func TestStory(t *testing.T) {
	s := New(end, 27, 1)
	if n := views(s, end.Add(-2*time.Hour), QuietPath); n != 0 {
		t.Errorf("%s has %d views 2 h before the end, want none (it answers 404)", QuietPath, n)
	}
	if n := views(s, end.Add(-7*24*time.Hour), QuietPath); n < 60 {
		t.Errorf("%s has %d views a week before: too few for a drop to be heard", QuietPath, n)
	}
	if n := views(s, end.Add(-time.Hour), NewPath); n != 0 {
		t.Errorf("%s has %d views before it is published", NewPath, n)
	}
	if n := views(s, end.Add(30*time.Minute), NewPath); n < 60 {
		t.Errorf("%s has %d views in its second half hour, want it taking off", NewPath, n)
	}
	before, during := views(s, end.Add(-7*24*time.Hour), SurgePath), views(s, end, SurgePath)
	if during < 8*before || during < 150 {
		t.Errorf("%s: %d views in the surge's hour, %d a week before", SurgePath, during, before)
	}
	if n := views(s, end, "/pricing"); n < 130 {
		t.Errorf("/pricing has %d views in the live hour: the threshold rule (100) would not fire", n)
	}
	hn := 0
	for _, l := range s.Minute(end.Add(10 * time.Minute)) {
		if strings.Contains(l.Text, SurgePath) && strings.Contains(l.Text, "news.ycombinator.com") {
			hn++
		}
	}
	if hn < 5 {
		t.Errorf("%d views from Hacker News in the surge's 10th minute", hn)
	}
}

func TestHistoryFilesAreWhatTheBackfillReads(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	s := New(end, 27, 0.2)
	st, err := s.WriteHistory(log, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"access.log.3.gz", "access.log.2.gz", "access.log.1", "access.log"}
	if len(st.Files) != len(want) {
		t.Fatalf("files %v, want %v", st.Files, want)
	}
	var prev time.Time
	total := 0
	for i, f := range st.Files {
		if filepath.Base(f) != want[i] {
			t.Errorf("file %d is %s, want %s", i, filepath.Base(f), want[i])
		}
		text := read(t, f)
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		total += len(lines)
		first, last := stamp(t, lines[0]), stamp(t, lines[len(lines)-1])
		if first.Before(prev) || last.Before(first) {
			t.Errorf("%s runs %s to %s, after %s: not oldest first", f, first, last, prev)
		}
		prev = last
		fi, _ := os.Stat(f)
		if i < len(want)-1 && fi.ModTime().Before(last) {
			t.Errorf("%s is dated %s, before its last line", f, fi.ModTime())
		}
	}
	if !prev.Before(end) || total != st.Lines {
		t.Errorf("the history ends at %s (want before %s), %d lines read of %d", prev, end, total, st.Lines)
	}
	again := t.TempDir()
	if _, err := New(end, 27, 0.2).WriteHistory(filepath.Join(again, "access.log"), 3); err != nil {
		t.Fatal(err)
	}
	for _, name := range want {
		if read(t, filepath.Join(dir, name)) != read(t, filepath.Join(again, name)) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

func TestLiveGoesOnWhereTheHistoryStops(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	end := time.Now().Add(-time.Minute) // a minute for Live to catch up at once
	s := New(end, 27, 1)
	if _, err := s.WriteHistory(log, 1); err != nil {
		t.Fatal(err)
	}
	before := len(strings.Split(read(t, log), "\n"))
	// At 600 ×, 2 s are 20 minutes.
	clock := democlock.Clock{Start: time.Now(), Speed: 600}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Live(ctx, log, clock, 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(read(t, log), "\n"), "\n")
	live := lines[before-1:]
	if len(live) < 300 {
		t.Fatalf("%d live lines in 20 minutes of the clock", len(live))
	}
	var prev time.Time
	for _, l := range lines[before-2:] {
		at := stamp(t, l)
		if at.Before(prev) {
			t.Fatalf("line at %s after one at %s: %s", at, prev, l)
		}
		prev = at
	}
	if want := join(s.Minute(end.Add(5 * time.Minute))); !strings.Contains(strings.Join(live, "\n")+"\n", want) {
		t.Error("the live lines are not the site's minutes")
	}
}

func join(ls []Line) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Text)
	}
	return b.String()
}

func read(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReader(f)
	if strings.HasSuffix(path, ".gz") {
		if r, err = gzip.NewReader(r); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func stamp(t *testing.T, line string) time.Time {
	t.Helper()
	i := strings.IndexByte(line, '[')
	at, err := time.Parse("02/Jan/2006:15:04:05 -0700", line[i+1:i+27])
	if err != nil {
		t.Fatalf("%v in %q", err, line)
	}
	return at
}
