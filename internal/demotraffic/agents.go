package demotraffic

import (
	"math/rand/v2"
	"time"
)

// browsers are the visitors' user agents; a client keeps its own.
var browsers = []string{
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
	"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
}

// crawler is a crawler's user agent, the network its fetches come from,
// and its share of the crawlers' lines.
type crawler struct {
	ua     string
	net    string
	weight float64
}

// crawlers: search engines, SEO tools, AI crawlers and the fetches AI
// assistants make for their users.
var crawlers = []crawler{
	{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "198.51.100.", 28},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36", "198.51.100.", 16},
	{"Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)", "203.0.113.", 4},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)", "203.0.113.", 5},
	{"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", "192.0.2.", 10},
	{"Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)", "192.0.2.", 7},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)", "198.51.100.", 9},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", "203.0.113.", 6},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)", "192.0.2.", 3},
	{"CCBot/2.0 (https://commoncrawl.org/faq/)", "198.51.100.", 3},
	{"Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)", "192.0.2.", 3},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot", "203.0.113.", 4},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)", "192.0.2.", 2},
}

func pickWeighted(rng *rand.Rand, cs []crawler) crawler {
	total := 0.0
	for _, c := range cs {
		total += c.weight
	}
	x := rng.Float64() * total
	for _, c := range cs {
		if x -= c.weight; x < 0 {
			return c
		}
	}
	return cs[len(cs)-1]
}

// source is a referrer and its share, in some week of the history.
type source struct {
	ref string
	// share in the oldest week and in the newest: the mix drifts
	// between them (search giving way to AI assistants, a newsletter
	// growing).
	from, to float64
}

var sources = []source{
	{"-", 38, 34},
	{"https://www.google.com/", 30, 22},
	{"https://www.bing.com/", 4, 3},
	{"https://duckduckgo.com/", 2, 4},
	{"https://chatgpt.com/", 1, 6},
	{"https://www.perplexity.ai/", 0.3, 2},
	{"https://www.linkedin.com/", 2, 3},
	{"https://github.com/pagewatch/pagewatch", 2, 3},
	{"https://news.ycombinator.com/", 0.5, 0.5},
	{"https://www.reddit.com/r/selfhosted/", 1, 1.5},
	{"internal", 19, 21}, // another page of the site
}

// referrer is where a view of p at t came from: the site's mix at that
// point of the history, a page's own sources on top (blog posts are
// shared), and in the history's third week a Reddit thread about the
// ClickHouse post.
func (s *Site) referrer(rng *rand.Rand, p *page, at time.Time) string {
	span := float64(7 * 24 * time.Hour * 5)
	f := min(1, max(0, 1-float64(s.End.Sub(at))/span)) // 0 five weeks back, 1 at End
	if p.path == "/blog/postgres-vs-clickhouse" {
		if d := s.End.Sub(at); d > 15*24*time.Hour && d < 17*24*time.Hour && rng.IntN(3) == 0 {
			return "https://www.reddit.com/r/programming/comments/1h2x9qk/postgres_vs_clickhouse_for_page_counts/"
		}
	}
	if p.blog && rng.IntN(5) == 0 {
		return [...]string{"https://x.com/", "https://www.linkedin.com/", "https://lobste.rs/", "https://www.reddit.com/r/programming/"}[rng.IntN(4)]
	}
	total := 0.0
	for _, src := range sources {
		total += src.from + (src.to-src.from)*f
	}
	x := rng.Float64() * total
	for _, src := range sources {
		if x -= src.from + (src.to-src.from)*f; x < 0 {
			if src.ref == "internal" {
				return "https://" + Host + s.pages[rng.IntN(12)].path
			}
			return src.ref
		}
	}
	return "-"
}
