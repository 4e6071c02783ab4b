package notify

import (
	"github.com/pagewatch/pagewatch/pipeline/links"

	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Name is what the message is of: the page's path, or the site for a
// message about a whole site (crossing.Why.SiteWide).
func (n Notification) Name() string {
	if n.Why.SiteWide() {
		return n.Site
	}
	return n.Path
}

// Notification is one threshold crossing to tell people about.
type Notification struct {
	Key        string // crossing key, unique per crossing, e.g. "pricing-hourly.3f2a9c.1"
	Rule       string
	Site, Path string // written by strangers: may contain anything
	Count      uint64
	Threshold  uint64
	Window     string // human text: "1h", "all time"
	// Event is an episodic rule's message: fire (or ""), escalate or
	// resolve ("back to normal"); see Predicate.
	Event      string
	CrossedAt  time.Time
	Recipients []string
	// Labels are the rule's notify.labels.
	Labels map[string]string
	// Links, by recipient, are the unsubscribe and snooze links (an
	// email sink then sends each recipient a copy with theirs); nil
	// without worker.links.
	Links map[string]links.RecipientLinks

	// Optional context. Left empty, the message has no chart and no
	// referrer list, and nothing in it hints at them.

	// WindowStart and WindowEnd bound what Series and Referrers cover,
	// [WindowStart, WindowEnd). Either may be zero: the chart then takes
	// its edges from Series.
	WindowStart, WindowEnd time.Time
	// Series is the page's hits per minute, one point per minute; minutes
	// without a point are drawn as zero. It becomes an inline PNG chart.
	Series []traffic.MinuteHits
	// Referrers are the page's top referrers in the window. The ten with
	// the most hits are shown, as text: they are written by strangers.
	Referrers []traffic.Referrer

	// Why says why the page moved (the crossing's why, computed by the
	// sweeper): its normal, rank, referrer domains and busiest minute.
	// Nil for digests and for crossings queued before it existed. The
	// referrer domains are written by strangers.
	Why *crossing.Why

	// Subject and Body are the rule's own texts (already rendered), used
	// in place of the default subject and first sentence. They are
	// cleaned like everything else: one line for the subject, lines of
	// plain text for the body.
	Subject, Body string

	// Digest, when set, makes this a storm guard's summary: these pages
	// crossed too, in the same sweep, and are listed rather than mailed
	// one by one. DigestTotal counts them all, listed or not.
	Digest      []DigestItem
	DigestTotal int
}

// DigestItem is one crossing in a digest.
type DigestItem struct {
	Path      string // written by strangers: may contain anything
	Count     uint64
	Threshold uint64
}
