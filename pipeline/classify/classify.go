// Package classify tells who sent a request from its user agent: a
// person's browser, a bot, an AI assistant fetching for a person, an AI
// crawler, or none of these that can be told (hit.Class).
//
// Bots are what github.com/monperrus/crawler-user-agents lists (some 600
// patterns, maintained and released monthly, with a Go package of its own
// in pure Go), and user agents holding one of a few extra substrings for
// what the list leaves out (feed readers, scripts). AI clients are a small
// table of our own (ai.go), checked first: the list has them as crawlers
// but does not tell an assistant fetching one page for a person from a
// crawler gathering pages for training.
//
// A Classifier is immutable and shared; a Cache, one per goroutine,
// classifies each distinct user agent once.
package classify

import (
	"bytes"
	"fmt"
	"unsafe"

	agents "github.com/monperrus/crawler-user-agents"

	"github.com/pagewatch/pagewatch/domain/hit"
)

// Classifier maps a user agent to its class. It is immutable once made,
// so one can be shared by any number of goroutines.
type Classifier struct {
	ai    matcher // index: into aiClasses
	extra matcher
	// aiClasses[i] is the class of the AI table's entry i.
	aiClasses []hit.Class
}

// New makes a Classifier that also calls a bot any user agent holding one
// of extra, compared without case. Each must be at least 3 bytes: shorter
// ones are in ordinary browsers' user agents ("li" in Linux).
func New(extra []string) (*Classifier, error) {
	c := &Classifier{}
	for i, e := range aiTable() {
		c.ai.add(e.token, i)
		c.aiClasses = append(c.aiClasses, e.class)
	}
	for i, s := range extra {
		if len(s) < minPattern {
			return nil, fmt.Errorf("classify: extra substring %d, %q: shorter than %d bytes", i, s, minPattern)
		}
		c.extra.add(s, i)
	}
	return c, nil
}

// Class is the class of a user agent as logged: "" and "-" (none logged)
// are unknown.
//
// Uncached, it costs a few microseconds, most of it the crawler list's
// search, and allocates; a Cache makes a repeated user agent cost a map
// lookup.
func (c *Classifier) Class(ua []byte) hit.Class {
	ua = bytes.TrimSpace(ua)
	if len(ua) == 0 || string(ua) == "-" {
		return hit.ClassUnknown
	}
	if i := c.ai.match(ua); i >= 0 {
		return c.aiClasses[i]
	}
	if c.extra.match(ua) >= 0 || agents.IsCrawler(unsafe.String(unsafe.SliceData(ua), len(ua))) {
		return hit.ClassBot
	}
	if !browserLike(ua) {
		return hit.ClassUnknown
	}
	if compatibleNotBrowser(ua) {
		return hit.ClassBot
	}
	return hit.ClassHuman
}

// browserLike reports whether ua starts the way browsers' do. Every
// browser in use sends "Mozilla/5.0 (...)"; old Opera sent "Opera/9.80".
// Scripts and libraries name themselves (curl/8.5.0, python-requests),
// so a user agent that does neither is unknown rather than a person:
// counting it as one would count every new script.
func browserLike(ua []byte) bool {
	return bytes.HasPrefix(ua, []byte("Mozilla/")) || bytes.HasPrefix(ua, []byte("Opera/"))
}

// compatibleNotBrowser reports whether ua is "Mozilla/N (compatible;"
// followed by anything but MSIE or Konqueror, the only browsers that
// wrote that form. Crawlers copied it from Internet Explorer to name
// themselves ("Mozilla/5.0 (compatible; Ezooms/1.0; help@moz.com)"), so
// it catches those that neither the list nor the extra substrings name.
func compatibleNotBrowser(ua []byte) bool {
	i := bytes.IndexByte(ua, ' ')
	if i < 0 {
		return false
	}
	rest, ok := bytes.CutPrefix(ua[i+1:], []byte("(compatible;"))
	if !ok {
		return false
	}
	rest = bytes.TrimLeft(rest, " ")
	return !bytes.HasPrefix(rest, []byte("MSIE ")) && !bytes.HasPrefix(rest, []byte("Konqueror/"))
}

// DefaultExtra is the default of ingest.tail.pages.bots: substrings that
// mark bots the crawler list leaves out, each found in real logs. The list
// names clients one by one, so generic words catch the long tail of small
// crawlers (LumiBot, EasouSpider); feed readers are often missing from
// it (FeedBurner, UniversalFeedParser, Liferea, CommaFeed); and scripts
// the list misses name their language or tool. "bot" also matches the
// rare phone named so (Cubot): a price for catching every "...bot".
func DefaultExtra() []string {
	return []string{
		"bot", "crawl", "spider", "scrape", "feed", "rss", "fetch",
		"validator", "monitor", "liferea", "livejournal",
		"java/", "ruby", "php/", "httpie", "postmanruntime",
	}
}
