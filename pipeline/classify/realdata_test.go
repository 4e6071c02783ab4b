package classify_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/pipeline/classify"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// The crawlers and feed readers of a real blog's log (May 2015), read off
// its user agents, with the lines each sent. Every one must be a bot:
// counted as a person, the 364 lines of UniversalFeedParser alone would
// be a busy reader.
var realBots = map[string]int{
	// Search engines, archives and SEO crawlers.
	"Googlebot": 543, "bingbot": 58, "msnbot": 118, "Yahoo! Slurp": 106,
	"Baiduspider": 84, "YandexBot": 64, "archive.org_bot": 171, "Ezooms": 157,
	"MJ12bot": 39, "AhrefsBot": 34, "Sogou": 18, "Spinn3r": 10,
	// Link previews.
	"facebookexternalhit": 14, "Twitterbot": 28,
	// Feed readers and aggregators.
	"UniversalFeedParser": 364, "Tiny Tiny RSS": 198, "FeedBurner": 108,
	"Feedbin": 50, "Feedly": 8, "Liferea": 9, "CommaFeed": 1,
	"Digg Feed Fetcher": 21, "LiveJournal.com": 19, "FlipboardRSS": 1,
	// Scripts.
	"Chef Client": 61, "Wget": 6, "curl": 1,
}

func realEntries(tb testing.TB) []logformat.Entry {
	tb.Helper()
	lines := realdata.Lines(tb, realdata.ApacheLog)
	entries := make([]logformat.Entry, 0, len(lines))
	for i, l := range lines {
		var e logformat.Entry
		if err := logformat.Parse(l, &e); err != nil {
			tb.Fatalf("line %d: %v", i+1, err)
		}
		entries = append(entries, e)
	}
	return entries
}

func TestRealLogBots(t *testing.T) {
	c := newClassifier(t, classify.DefaultExtra())
	seen := map[string]int{}
	for _, e := range realEntries(t) {
		for name := range realBots {
			if !bytes.Contains(e.UserAgent, []byte(name)) {
				continue
			}
			seen[name]++
			if cl := c.Class(e.UserAgent); cl != hit.ClassBot {
				t.Errorf("%q: %s, want bot", e.UserAgent, cl)
			}
		}
	}
	for name, n := range realBots {
		if seen[name] != n {
			t.Errorf("%s: %d lines in the log, want %d", name, seen[name], n)
		}
	}
}

// What the classes make of the whole log, with the default extra
// substrings: a quarter of its lines are bots, none AI (2015); the
// unknown are mostly lines without a user agent ("-") and apps.
func TestRealLogReport(t *testing.T) {
	rep := classify.NewReport(newClassifier(t, classify.DefaultExtra()))
	f, err := os.Open(realdata.Path(t, realdata.ApacheLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := rep.AddLog(f, logformat.ParserFunc(logformat.Parse)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.Write(&out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	want := map[hit.Class]int{hit.ClassHuman: 7036, hit.ClassBot: 2650, hit.ClassAIAgent: 0, hit.ClassAICrawler: 0, hit.ClassUnknown: 314}
	for cl, n := range want {
		if got := rep.Lines(cl); got != n {
			t.Errorf("%s: %d lines, want %d", cl, got, n)
		}
	}
}
