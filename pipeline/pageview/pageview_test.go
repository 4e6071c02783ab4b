package pageview_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

const browser = "Mozilla/5.0 (X11; Linux x86_64; rv:27.0) Gecko/20100101 Firefox/27.0"

// entry parses a combined-format line made of its arguments.
func entry(t testing.TB, request string, status int, ua string) *logformat.Entry {
	t.Helper()
	line := fmt.Sprintf(`1.2.3.4 - - [17/May/2015:10:05:03 +0000] "%s" %03d 512 "-" "%s"`, request, status, ua)
	var e logformat.Entry
	if err := logformat.Parse([]byte(line), &e); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return &e
}

func TestFillKeeps(t *testing.T) {
	n := normalizer(t, nil)
	e := entry(t, "GET /a/./b?utm_source=x HTTP/1.1", 200, browser)
	h := hit.Hit{Offset: 7}
	if drop := n.Fill(&h, e, "example.com"); drop != "" {
		t.Fatalf("dropped: %s", drop)
	}
	want := hit.Hit{Time: time.Date(2015, 5, 17, 10, 5, 3, 0, time.UTC), Site: "example.com", Path: "/a/b",
		Method: "GET", Status: 200, Bytes: 512, Referer: "-"}
	if h != want {
		t.Fatalf("got  %+v\nwant %+v", h, want)
	}
}

func TestFilters(t *testing.T) {
	type tc struct {
		request string
		status  int
		ua      string
		drop    string
	}
	off := func(c *pageview.Config) { c.Methods, c.Statuses, c.StaticExtensions, c.Bots = nil, nil, nil, nil }
	for name, c := range map[string]struct {
		edit  func(*pageview.Config)
		cases []tc
	}{
		"defaults": {nil, []tc{
			{"GET / HTTP/1.1", 200, browser, ""},
			{"GET /a HTTP/1.1", 304, browser, ""}, // a view of the cached copy
			{"GET /a HTTP/1.1", 206, browser, ""},
			{"HEAD / HTTP/1.1", 200, browser, pageview.DropMethod},
			{"POST /login HTTP/1.1", 200, browser, pageview.DropMethod},
			{"get / HTTP/1.1", 200, browser, pageview.DropMethod},
			{"OPTIONS * HTTP/1.1", 200, browser, pageview.DropMethod},
			{"GET /old HTTP/1.1", 301, browser, pageview.DropStatus}, // counted where it leads
			{"GET /nope HTTP/1.1", 404, browser, pageview.DropStatus},
			{"GET / HTTP/1.1", 500, browser, pageview.DropStatus},
			{"GET / HTTP/1.1", 0, browser, pageview.DropStatus},
			{"GET / HTTP/1.1", 999, browser, pageview.DropStatus},
			{"GET /s/site.css HTTP/1.1", 200, browser, pageview.DropStatic},
			{"GET /s/SITE.CSS?v=3 HTTP/1.1", 200, browser, pageview.DropStatic},
			{"GET /favicon.ico HTTP/1.1", 200, browser, pageview.DropStatic},
			{"GET /i/a.b.jpeg HTTP/1.1", 304, browser, pageview.DropStatic},
			{"GET /s/app.js.map HTTP/1.1", 200, browser, pageview.DropStatic},
			{"GET /site.css/ HTTP/1.1", 200, browser, ""}, // a directory, by its slash
			{"GET /css HTTP/1.1", 200, browser, ""},
			{"GET /.css HTTP/1.1", 200, browser, pageview.DropStatic},
			{"GET /paper.pdf HTTP/1.1", 200, browser, ""},
			{"GET /robots.txt HTTP/1.1", 200, browser, ""},
			{"GET /feed.xml HTTP/1.1", 200, browser, ""},
			{"GET /a.x%2Ecss HTTP/1.1", 200, browser, pageview.DropStatic}, // decoded before it is judged
			// Bots are page views too, of class bot, that Counts says
			// whether to count (TestCounts).
			{"GET / HTTP/1.1", 200, "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", ""},
			{"GET / HTTP/1.1", 200, "curl/8.5.0", ""},
			{"GET http://example.com/p HTTP/1.1", 200, browser, ""},
			{"CONNECT example.com:443 HTTP/1.1", 200, browser, pageview.DropMethod},
		}},
		"off": {off, []tc{
			{"HEAD / HTTP/1.1", 500, "Googlebot", ""},
			{"BREW /pot.css HTTP/1.1", 418, "curl", ""},
			{"OPTIONS * HTTP/1.1", 200, browser, pageview.DropNotAPath},
			{"CONNECT example.com:443 HTTP/1.1", 200, browser, pageview.DropNotAPath},
			{"GET junk HTTP/1.1", 200, browser, pageview.DropNotAPath},
			{"GET / HTTP/1.1", 0, browser, ""},
		}},
		"replaced": {func(c *pageview.Config) {
			c.Methods = []string{"GET", "POST"}
			c.Statuses = []string{"200", "4xx"}
			c.StaticExtensions = []string{".PDF"}
		}, []tc{
			{"POST /form HTTP/1.1", 200, "x", ""},
			{"HEAD /form HTTP/1.1", 200, "x", pageview.DropMethod},
			{"GET /a HTTP/1.1", 204, "x", pageview.DropStatus},
			{"GET /a HTTP/1.1", 304, "x", pageview.DropStatus},
			{"GET /a HTTP/1.1", 404, "x", ""},
			{"GET /a.pdf HTTP/1.1", 200, "x", pageview.DropStatic},
			{"GET /a.css HTTP/1.1", 200, "x", ""},
		}},
	} {
		n := normalizer(t, c.edit)
		for _, tc := range c.cases {
			var h hit.Hit
			if drop := n.Fill(&h, entry(t, tc.request, tc.status, tc.ua), "s"); drop != tc.drop {
				t.Errorf("%s: %q %d %q: drop %q, want %q", name, tc.request, tc.status, tc.ua, drop, tc.drop)
			}
		}
	}
}

func TestFillNoRequest(t *testing.T) {
	n := normalizer(t, nil)
	for _, e := range []*logformat.Entry{
		entry(t, "-", 408, "-"),
		entry(t, `\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03`, 400, "-"),
		{Method: []byte("GET")},
	} {
		h := hit.Hit{Path: "untouched"}
		if drop := n.Fill(&h, e, "s"); drop != pageview.DropNoRequest || h.Path != "untouched" {
			t.Errorf("%q: drop %q, hit %+v", e.Request, drop, h)
		}
	}
}

// A kept line costs one allocation, its path (up to 256 bytes), whoever
// sent it; a dropped one none.
func TestFillAllocations(t *testing.T) {
	n := normalizer(t, func(c *pageview.Config) { c.KeepQuery = []string{"page", "lang"} })
	for request, want := range map[string]float64{
		"GET /blog/2015/05/a-post.html HTTP/1.1":                   1,
		"GET /b?lang=de&utm_source=x&page=2 HTTP/1.1":              1,
		`GET /caf\xC3\xA9/%7Euser/./x/../y HTTP/1.1`:               1,
		"GET http://example.com/a HTTP/1.1":                        1,
		"GET /" + strings.Repeat("x", 200) + " HTTP/1.1":           1,
		"GET /style.css HTTP/1.1":                                  0,
		"GET /" + strings.Repeat("x", 200) + "/style.css HTTP/1.1": 0,
	} {
		e := entry(t, request, 200, browser)
		var h hit.Hit
		if got := testing.AllocsPerRun(100, func() { n.Fill(&h, e, "s") }); got != want {
			t.Errorf("%.40q: %v allocations, want %v", request, got, want)
		}
	}
}

// Counts follows count_classes, and the classifier takes bots as extra
// substrings beyond the crawler list.
func TestCounts(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(*pageview.Config)
		uas  map[string]bool // user agent: counted
	}{
		"defaults": {nil, map[string]bool{
			browser: true,
			"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)":         false,
			"Mozilla/5.0 (compatible; BINGBOT/2.0)":                                            false,
			"curl/8.5.0":                                                                       false,
			"UniversalFeedParser/4.2-pre-314-svn +http://feedparser.org/":                      false,
			"Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/120.0":                             false,
			"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2":       false,
			"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0": true,
			"Lynx/2.8.7rel.2 libwww-FM/2.14":                                                   true, // unknown: a browser, but few are; not libwww-perl
			"-":                                                                                true, // unknown: scripts, but also the common format's lack
		}},
		"replaced": {func(c *pageview.Config) {
			c.Bots = []string{"Firefox/27"}
			c.CountClasses = []string{"human"}
		}, map[string]bool{
			browser: false,
			"Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0": true,
			"curl/8.5.0": false,
			"-":          false,
			"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0": false,
		}},
		"all": {func(c *pageview.Config) { c.CountClasses = nil }, map[string]bool{
			"curl/8.5.0": true, "-": true,
		}},
	} {
		n := normalizer(t, c.edit)
		for ua, want := range c.uas {
			cl := n.Classifier().Class([]byte(ua))
			if got := n.Counts(cl); got != want {
				t.Errorf("%s: %q, class %s: counted %v, want %v", name, ua, cl, got, want)
			}
		}
	}
}

func TestValidateNamesKeys(t *testing.T) {
	for want, edit := range map[string]func(*pageview.Config){
		"ingest.tail.pages.keep_query[2]: must not be empty":                                                        func(c *pageview.Config) { c.KeepQuery = []string{"a", "b", ""} },
		"ingest.tail.pages.keep_query[0]: must be a parameter name":                                                 func(c *pageview.Config) { c.KeepQuery = []string{"a=1"} },
		"ingest.tail.pages.keep_query[1]: must not contain spaces":                                                  func(c *pageview.Config) { c.KeepQuery = []string{"a", "b c"} },
		"ingest.tail.pages.keep_query[1]: same as keep_query[0]":                                                    func(c *pageview.Config) { c.KeepQuery = []string{"a_b", "a%5fb"} },
		`ingest.tail.pages.trailing_slash: must be "keep" or "strip", got "add"`:                                    func(c *pageview.Config) { c.TrailingSlash = "add" },
		"ingest.tail.pages.max_path_bytes: must be 64..65536, got 10":                                               func(c *pageview.Config) { c.MaxPathBytes = 10 },
		"ingest.tail.pages.max_path_bytes: must be 64..65536, got 0":                                                func(c *pageview.Config) { c.MaxPathBytes = 0 },
		`ingest.tail.pages.methods[1]: must be upper case as logged, like "HEAD"`:                                   func(c *pageview.Config) { c.Methods = []string{"GET", "head"} },
		`ingest.tail.pages.methods[0]: must be a request method`:                                                    func(c *pageview.Config) { c.Methods = []string{"GET HEAD"} },
		"ingest.tail.pages.methods[1]: same as methods[0]":                                                          func(c *pageview.Config) { c.Methods = []string{"GET", "GET"} },
		`ingest.tail.pages.statuses[1]: must be a code like "304" or a class like "2xx", got "2x"`:                  func(c *pageview.Config) { c.Statuses = []string{"200", "2x"} },
		`ingest.tail.pages.statuses[0]: must be a code like "304"`:                                                  func(c *pageview.Config) { c.Statuses = []string{"099"} },
		"ingest.tail.pages.statuses[1]: same as statuses[0]":                                                        func(c *pageview.Config) { c.Statuses = []string{"2xx", "2XX"} },
		"ingest.tail.pages.static_extensions[1]: must be an extension":                                              func(c *pageview.Config) { c.StaticExtensions = []string{"css", "tar.gz"} },
		"ingest.tail.pages.static_extensions[0]: must be an extension of 1..16":                                     func(c *pageview.Config) { c.StaticExtensions = []string{"."} },
		"ingest.tail.pages.static_extensions[1]: same as static_extensions[0]":                                      func(c *pageview.Config) { c.StaticExtensions = []string{"css", ".CSS"} },
		"ingest.tail.pages.bots[0]: must be 3..128 printable ASCII":                                                 func(c *pageview.Config) { c.Bots = []string{"bo"} },
		"ingest.tail.pages.bots[1]: must be 3..128 printable ASCII":                                                 func(c *pageview.Config) { c.Bots = []string{"bot", "bot\n"} },
		"ingest.tail.pages.bots[1]: same as bots[0]":                                                                func(c *pageview.Config) { c.Bots = []string{"Bot", "bOT"} },
		`ingest.tail.pages.count_classes[1]: must be one of unknown, human, bot, ai_agent, ai_crawler, got "Human"`: func(c *pageview.Config) { c.CountClasses = []string{"bot", "Human"} },
		"ingest.tail.pages.count_classes[2]: same as count_classes[0]":                                              func(c *pageview.Config) { c.CountClasses = []string{"bot", "human", "bot"} },
	} {
		cfg := pageview.DefaultConfig()
		edit(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant it to contain %q", err, want)
		}
		if _, err := pageview.New(cfg); err == nil {
			t.Errorf("New accepted what Validate refuses (%s)", want)
		}
	}
	// Every problem is reported, not only the first.
	cfg := pageview.Config{TrailingSlash: "x", Methods: []string{""}}
	err := cfg.Validate()
	for _, key := range []string{"trailing_slash", "max_path_bytes", "methods[0]"} {
		if err == nil || !strings.Contains(err.Error(), "ingest.tail.pages."+key+":") {
			t.Errorf("got %v, want it to name %s", err, key)
		}
	}
	if err := pageview.DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// A referrer is the client's to write: a hit keeps its first 1,024
// bytes, cut at a character's start.
func TestRefererIsCapped(t *testing.T) {
	n := normalizer(t, nil)
	long := "https://example.org/" + strings.Repeat("é", 2000)
	e := logformat.Entry{Method: []byte("GET"), Target: []byte("/a"), Status: 200, Referer: []byte(long)}
	var h hit.Hit
	if drop := n.Fill(&h, &e, "example.com"); drop != "" {
		t.Fatal(drop)
	}
	if len(h.Referer) > 1024 || len(h.Referer) < 1020 || !utf8.ValidString(h.Referer) || !strings.HasPrefix(long, h.Referer) {
		t.Errorf("referrer of %d bytes kept as %d bytes, valid UTF-8 %t", len(long), len(h.Referer), utf8.ValidString(h.Referer))
	}
}
