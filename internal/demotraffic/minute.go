package demotraffic

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// Line is one access-log line and its time.
type Line struct {
	At   time.Time
	Text string // combined format, newline included
	// Crawler: written by a crawler or an AI agent, not a browser.
	Crawler bool
}

// crawlerShare is how many of the site's lines crawlers write: 15 %,
// about what small sites see; they keep no office hours.
const crawlerShare = 0.15

// Minute is the lines of the minute starting at t (truncated to the
// minute), in time order. The same minute always gives the same lines.
func (s *Site) Minute(t time.Time) []Line {
	t = t.UTC().Truncate(time.Minute)
	rng := rand.New(rand.NewPCG(s.Seed, uint64(t.Unix()/60)))
	var out []Line
	views := 0.0
	for i := range s.pages {
		p := &s.pages[i]
		r := s.rate(p, t) * s.Scale
		views += r
		n := poisson(rng, r)
		for range n {
			out = append(out, s.view(rng, p, t))
		}
		for range poisson(rng, s.notFound(p, t)*s.Scale) {
			l := s.view(rng, p, t)
			l.Text = visitorLine(l.At, "GET", p.path, 404, 1623, "-", rng.IntN(len(browsers)))
			out = append(out, l)
		}
	}
	// Crawlers: a steady share of the site's weekday traffic, day and night.
	peak := 0.0
	for _, p := range s.pages {
		peak += p.rate
	}
	for range poisson(rng, peak/60*s.Scale*crawlerShare/(1-crawlerShare)*0.55) {
		out = append(out, s.crawl(rng, t))
	}
	// Scanners probing for what the site does not run, a few an hour.
	for range poisson(rng, 0.05*s.Scale) {
		at := t.Add(time.Duration(rng.IntN(60)) * time.Second)
		path := probes[rng.IntN(len(probes))]
		out = append(out, Line{At: at, Text: visitorLine(at, "GET", path, 404, 153, "-", rng.IntN(len(browsers)))})
	}
	slices.SortStableFunc(out, func(a, b Line) int { return a.At.Compare(b.At) })
	return out
}

// view is one browser's view of p within minute t: its client, its
// referrer, and sometimes a query string (dropped at ingest).
func (s *Site) view(rng *rand.Rand, p *page, t time.Time) Line {
	at := t.Add(time.Duration(rng.IntN(60)) * time.Second)
	since := at.Sub(s.End)
	surging := p.path == SurgePath && rng.Float64()*s.rate(p, t) < surge(since)
	var client int
	if surging {
		// Hacker News readers: new visitors, each once or twice.
		client = clients/2 + rng.IntN(clients/2)
	} else {
		// Regulars come back: a skewed draw over the pool.
		u := rng.Float64()
		client = int(u * u * clients)
	}
	var ref string
	if surging {
		ref = "https://news.ycombinator.com/item?id=43218876"
		if rng.IntN(8) == 0 {
			ref = "https://news.ycombinator.com/"
		}
	} else {
		ref = s.referrer(rng, p, at)
	}
	path := p.path
	if rng.IntN(25) == 0 {
		path += "?utm_source=" + [...]string{"newsletter", "twitter", "linkedin"}[rng.IntN(3)]
	}
	bytes := p.bytes + rng.IntN(400) - 200
	return Line{At: at, Text: visitorLine(at, "GET", path, 200, bytes, ref, client)}
}

// clients is the size of the pool of visitors (an address and a browser
// each), enough that the console's visitor counts look like a site's.
const clients = 24000

// visitorLine is a browser's line: client picks its address and browser.
func visitorLine(at time.Time, method, target string, status, bytes int, ref string, client int) string {
	return combined(clientAddr(client), at, method, target, status, bytes, ref, browsers[client%len(browsers)])
}

// clientAddr is client's address, from the documentation ranges: IPv4
// (RFC 5737, a few hundred addresses, shared as behind NAT) for 60 %,
// IPv6 (RFC 3849) for the rest.
func clientAddr(client int) string {
	h := uint32(client) * 2654435761 // spread neighbours apart
	if client%5 < 3 {
		nets := [...]string{"192.0.2.", "198.51.100.", "203.0.113."}
		return nets[h%3] + strconv.Itoa(int(h>>8%254)+1)
	}
	return "2001:db8:" + strconv.FormatUint(uint64(h>>16), 16) + "::" + strconv.FormatUint(uint64(h&0xffff), 16)
}

// crawl is a crawler's fetch: any page, robots.txt or the sitemap.
func (s *Site) crawl(rng *rand.Rand, t time.Time) Line {
	at := t.Add(time.Duration(rng.IntN(60)) * time.Second)
	c := pickWeighted(rng, crawlers)
	var path string
	switch rng.IntN(20) {
	case 0:
		path = "/robots.txt"
	case 1:
		path = "/sitemap.xml"
	default:
		path = s.pages[rng.IntN(len(s.pages)-1)].path // not the unpublished post
	}
	status, bytes := 200, 8000+rng.IntN(20000)
	if path == QuietPath && at.Sub(s.End) >= quietSince {
		status, bytes = 404, 1623
	}
	addr := c.net + strconv.Itoa(1+rng.IntN(60))
	return Line{At: at, Crawler: true, Text: combined(addr, at, "GET", path, status, bytes, "-", c.ua)}
}

// combined formats a line in the combined log format.
func combined(addr string, at time.Time, method, target string, status, bytes int, ref, ua string) string {
	b := make([]byte, 0, 256)
	b = append(b, addr...)
	b = append(b, " - - ["...)
	b = at.UTC().AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
	b = append(b, "] \""...)
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\" "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(bytes), 10)
	b = append(b, " \""...)
	b = append(b, ref...)
	b = append(b, "\" \""...)
	b = append(b, ua...)
	b = append(b, "\"\n"...)
	return string(b)
}

// poisson draws a Poisson count of mean mu (Knuth's method for small
// means, a rounded normal above 30: the demo's rates are small).
func poisson(rng *rand.Rand, mu float64) int {
	if mu <= 0 {
		return 0
	}
	if mu > 30 {
		return max(0, int(math.Round(mu+math.Sqrt(mu)*rng.NormFloat64())))
	}
	l, k, p := math.Exp(-mu), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// probes are what scanners ask for.
var probes = []string{"/wp-login.php", "/.env", "/xmlrpc.php", "/phpmyadmin/", "/.git/config"}
