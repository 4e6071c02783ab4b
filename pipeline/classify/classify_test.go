package classify_test

import (
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/classify"
)

func newClassifier(tb testing.TB, extra []string) *classify.Classifier {
	tb.Helper()
	c, err := classify.New(extra)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// Real user agents, as their senders document or log them.
var realAgents = map[hit.Class][]string{
	hit.ClassHuman: {
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4_1) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Safari/605.1.15",
		"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.80",
		"Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)",
		"Opera/9.80 (X11; Linux x86_64) Presto/2.12.388 Version/12.16",
		"Mozilla/5.0 (compatible; Konqueror/3.5; OpenBSD) KHTML/3.5.9 (like Gecko)",
	},
	hit.ClassBot: {
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
		"Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)",
		"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
		"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
		"Feedly/1.0 (+http://www.feedly.com/fetcher.html; 16 subscribers; like FeedFetcher-Google)",
		"Tiny Tiny RSS/23.04 (https://tt-rss.org/)",
		"FreshRSS/1.23.1 (Linux; https://freshrss.org)",
		"UptimeRobot/2.0 (http://www.uptimerobot.com/)",
		"curl/8.5.0",
		"Wget/1.21.4",
		"python-requests/2.31.0",
		"Go-http-client/1.1",
		"okhttp/4.12.0",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36",
		// Caught by the default extra substrings, not the list.
		"Java/17.0.2",
		"FeedBurner/1.0 (http://www.FeedBurner.com)",
		"UniversalFeedParser/4.2-pre-314-svn +http://feedparser.org/",
		"PostmanRuntime/7.37.3",
		"Mozilla/5.0 (compatible; BeetleBot; )",
		// Caught by their "(compatible; ..." form alone.
		"Mozilla/5.0 (compatible; Ezooms/1.0; help@moz.com)",
		"Mozilla/4.0 (compatible;)",
	},
	hit.ClassAIAgent: {
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-User/1.0; +https://docs.mistral.ai/robots)",
		"DuckAssistBot/1.2; (+http://duckduckgo.com/duckassistbot.html)",
		"meta-externalfetcher/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
	},
	hit.ClassAICrawler: {
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-SearchBot/1.0; +Claude-SearchBot@anthropic.com)",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)",
		"CCBot/2.0 (https://commoncrawl.org/faq/)",
		"Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)",
		"meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot) Chrome/119.0.6045.214 Safari/537.36",
		"Mozilla/5.0 (compatible; Google-CloudVertexBot; +https://cloud.google.com/enterprise-search)",
		"Mozilla/5.0 (compatible; Diffbot/0.1; +http://www.diffbot.com)",
	},
	hit.ClassUnknown: {
		"", "-", "  ",
		"Dalvik/2.1.0 (Linux; U; Android 14; Pixel 8 Build/AP1A.240405.002)",
		"Lynx/2.8.9rel.1 libwww-FM/2.14 SSL-MM/1.4.1 OpenSSL/1.1.1d",
		"Safari/9537.73.11 CFNetwork/673.0.3 Darwin/13.0.0 (x86_64)",
		"User-Agent: Mozilla/5.0 (Windows NT 6.1; WOW64; rv:14.0) Gecko/20100101 Firefox/14.0.1",
	},
}

func TestClassRealAgents(t *testing.T) {
	c := newClassifier(t, classify.DefaultExtra())
	for want, uas := range realAgents {
		for _, ua := range uas {
			if got := c.Class([]byte(ua)); got != want {
				t.Errorf("%q: %s, want %s", ua, got, want)
			}
		}
	}
}

// Without extra substrings the list decides: a feed reader it does not
// name is then unknown, not a bot, and still not a person; a crawler that
// names itself the way Internet Explorer did is a bot all the same.
func TestClassWithoutExtra(t *testing.T) {
	c := newClassifier(t, nil)
	for ua, want := range map[string]hit.Class{
		"FeedBurner/1.0 (http://www.FeedBurner.com)":                               hit.ClassUnknown,
		"Mozilla/5.0 (compatible; BeetleBot; )":                                    hit.ClassBot,
		"Mozilla/5.0 (X11; Linux x86_64; BeetleBot) Firefox/125.0":                 hit.ClassHuman,
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)": hit.ClassBot,
		"curl/8.5.0":       hit.ClassBot,
		"ChatGPT-User/1.0": hit.ClassAIAgent,
	} {
		if got := c.Class([]byte(ua)); got != want {
			t.Errorf("%q: %s, want %s", ua, got, want)
		}
	}
}

// Extra substrings are compared without case, and the AI table wins over
// them: ClaudeBot holds "bot" but is an AI crawler.
func TestClassExtra(t *testing.T) {
	c := newClassifier(t, []string{"MyMonitor", "bot"})
	for ua, want := range map[string]hit.Class{
		"Mozilla/5.0 (compatible; mymonitor/2)":         hit.ClassBot,
		"Mozilla/5.0 (compatible; ClaudeBot/1.0)":       hit.ClassAICrawler,
		"Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0": hit.ClassHuman,
	} {
		if got := c.Class([]byte(ua)); got != want {
			t.Errorf("%q: %s, want %s", ua, got, want)
		}
	}
	if _, err := classify.New([]string{"ab"}); err == nil {
		t.Error("a 2-byte extra substring was accepted")
	}
}

func TestCache(t *testing.T) {
	c := newClassifier(t, classify.DefaultExtra())
	k := c.NewCache(3)
	uas := []string{"curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0", "GPTBot/1.2", "-", strings.Repeat("x", 600)}
	for range 3 {
		for _, ua := range uas {
			if got, want := k.Class([]byte(ua)), c.Class([]byte(ua)); got != want {
				t.Errorf("%.20q: cached %s, want %s", ua, got, want)
			}
			if k.Len() > 3 {
				t.Fatalf("cache holds %d, bound 3", k.Len())
			}
		}
	}
	// A known user agent costs no allocation.
	ua := []byte(uas[1])
	k.Class(ua)
	if n := testing.AllocsPerRun(100, func() { k.Class(ua) }); n != 0 {
		t.Errorf("a cached user agent allocates %v times", n)
	}
}
