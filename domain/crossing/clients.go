package crossing

import (
	"math"
	"strconv"
	"strings"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Who sent a page's hits, and from where: the why's parts on its clients
// and its referrers.

// Clients is the why's part on who sent a page's hits in the window.
type Clients struct {
	// Views are the counted hits; Keyed those with a client key, the
	// denominator of TopShare; Visitors the distinct keys among them.
	Views    uint64 `json:"views"`
	Keyed    uint64 `json:"keyed,omitempty"`
	Visitors uint64 `json:"visitors,omitempty"`
	// TopViews are the busiest client's views, TopShare their share of
	// the keyed views (0..1).
	TopViews uint64  `json:"top_views,omitempty"`
	TopShare float64 `json:"top_share,omitempty"`
	// Hits are every hit, counted or not: the classes' denominator.
	Hits    uint64       `json:"hits"`
	Classes []ClassShare `json:"classes,omitempty"`
	// Mostly marks a window most of which one client, or clients that
	// could not be identified, sent, past the rule's client guard share
	// (half, for rules without one): MostlyOneClient, MostlyUnidentified
	// or empty.
	Mostly string `json:"mostly,omitempty"`
}

// ClassShare is one client class's hits in the window and their share
// of all its hits (0..1).
type ClassShare struct {
	Class   string  `json:"class"` // domain/hit.Class's name
	Hits    uint64  `json:"hits"`
	Share   float64 `json:"share"`
	Counted bool    `json:"counted,omitempty"`
}

// The marks of Clients.Mostly.
const (
	MostlyOneClient    = "one_client"
	MostlyUnidentified = "unidentified"
)

// Below these shares a part of the clients is not worth a word: the
// busiest client of a page read by many, a class with a few hits.
const (
	tellTopShare   = 0.2
	tellClassShare = 0.05
)

// Text is the views against their visitors, and the busiest client's
// share when it is worth telling: "1,000 views from 3 visitors; one
// client sent 82%". Empty when nothing is known beyond the views.
func (c *Clients) Text() string {
	if c == nil || c.Keyed == 0 {
		return ""
	}
	visitors := "visitors"
	if c.Visitors == 1 {
		visitors = "visitor"
	}
	s := traffic.FormatCount(c.Views) + " views from " + traffic.FormatCount(c.Visitors) + " " + visitors
	if c.Visitors > 1 && c.TopShare >= tellTopShare {
		s += "; one client sent " + pct(c.TopShare)
	}
	return s
}

// classWords name the classes in prose; human is the rest, and left out.
var classWords = map[string]string{
	"bot": "bots", "ai_crawler": "AI crawlers", "ai_agent": "AI assistants", "unknown": "unidentified clients",
}

// ClassesText is the share of each class other than human whose share
// is worth telling, most first: "bots 40% of hits, AI crawlers 5%".
func (c *Clients) ClassesText() string {
	if c == nil || c.Hits == 0 {
		return ""
	}
	var parts []string
	seen := map[string]bool{}
	for _, k := range c.Classes {
		word, ok := classWords[k.Class]
		if !ok || seen[k.Class] {
			continue
		}
		seen[k.Class] = true
		var hits uint64
		for _, o := range c.Classes { // counted and not, from tailers counting differently
			if o.Class == k.Class {
				hits += o.Hits
			}
		}
		share := float64(hits) / float64(c.Hits)
		if share < tellClassShare {
			continue
		}
		p := word + " " + pct(share)
		if len(parts) == 0 {
			p += " of hits"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// MostlyText is the mark in words: "mostly one client", "mostly
// unidentified clients", or empty.
func (c *Clients) MostlyText() string {
	if c == nil {
		return ""
	}
	switch c.Mostly {
	case MostlyOneClient:
		return "mostly one client"
	case MostlyUnidentified:
		return "mostly unidentified clients"
	}
	return ""
}

// pct writes a share as a whole percent, never rounding a part up to
// 100% or down to 0%.
func pct(f float64) string {
	p := math.Round(f * 100)
	switch {
	case p >= 100 && f < 1:
		p = 99
	case p <= 0 && f > 0:
		p = 1
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}

// ReferrerShare is one referrer domain's part in a window and before it.
type ReferrerShare struct {
	Domain        string  `json:"domain"`
	Hits          uint64  `json:"hits"`
	Share         float64 `json:"share"`          // of the window's views with a referrer, 0..1
	BaselineShare float64 `json:"baseline_share"` // the same over the baseline period
}
