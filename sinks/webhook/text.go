package webhook

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// message is a notification as the chat services show it: a title, the
// rule's own lines or a sentence, facts, a digest's pages and a footer.
// Every string is one line of valid UTF-8 without control characters,
// bounded; each service escapes it for its own markup.
type message struct {
	title  string
	intro  []string
	facts  []fact
	digest []string // "3,000  /blog/a (threshold 1,000)"
	more   int      // digest pages not listed
	footer string
	at     time.Time
}

type fact struct{ name, value string }

// Bounds on stranger-written text in a chat message.
const (
	maxTitle      = 150 // Slack's header block limit
	maxLine       = 500
	maxIntroLines = 20
	maxDigest     = 20
)

func newMessage(n notify.Notification) message {
	window := clean(n.Window, 50)
	allTime := window == "" || strings.EqualFold(window, "all time")
	m := message{at: n.CrossedAt.UTC()}
	predicate := n.Predicate(func(s string) string { return clean(orEmpty(s), 60) })
	// The page's name gets what the predicate leaves of the title.
	m.title = clean(orEmpty(n.Name()), max(maxTitle-1-utf8.RuneCountInString(predicate), 20)) + " " + predicate
	m.title = truncate(m.title, maxTitle)
	if len(n.Digest) > 0 || n.DigestTotal > 0 {
		total := max(n.DigestTotal, len(n.Digest))
		m.title = traffic.FormatCount(uint64(total)) + " pages matching " + clean(orEmpty(n.Path), maxTitle-50) + " passed their thresholds"
		for _, d := range n.Digest[:min(len(n.Digest), maxDigest)] {
			m.digest = append(m.digest, traffic.FormatCount(d.Count)+"  "+clean(orEmpty(d.Path), 200)+" (threshold "+traffic.FormatCount(d.Threshold)+")")
		}
		m.more = total - len(m.digest)
	}
	if n.Subject != "" {
		m.title = clean(n.Subject, maxTitle)
	}
	for i, line := range strings.Split(n.Body, "\n") {
		if n.Body == "" || i == maxIntroLines {
			break
		}
		m.intro = append(m.intro, clean(line, maxLine))
	}
	if len(m.intro) == 0 && len(m.digest) > 0 {
		m.intro = []string{traffic.FormatCount(uint64(len(m.digest)+m.more)) + " pages matching " + clean(orEmpty(n.Path), maxLine) + " on " + clean(orEmpty(n.Site), 200) + " passed their thresholds in one sweep."}
	}
	if len(m.intro) == 0 {
		page := n.Path
		if n.Why.SiteWide() {
			page = "every page"
		}
		m.intro = []string{clean(orEmpty(page), maxLine) + " on " + clean(orEmpty(n.Site), 200) + " " + predicate + "."}
	}
	if !allTime {
		window = clean(n.Window, 50)
	} else {
		window = "all time"
	}
	m.facts = []fact{{"Site", clean(orEmpty(n.Site), 200)}}
	if n.Why.SiteWide() {
		// A site's "no data": when its gap began and what its tailers
		// said of its logs; it has no page, views or window.
		m.facts = append(m.facts, fact{"Gap began", n.Why.Since.UTC().Format(time.RFC3339)})
		if l := n.Why.Feeds.Text(); l != "" {
			m.facts = append(m.facts, fact{"Logs", clean(l, maxLine)})
		}
		m.facts = append(m.facts, fact{"Crossed at", m.at.Format(time.RFC3339)}, fact{"Rule", clean(n.Rule, 100)})
		m.footer = "Sent by pagewatch for crossing " + clean(n.Key, 200) + "."
		return m
	}
	if len(m.digest) == 0 {
		m.facts = append(m.facts, fact{"Page", clean(orEmpty(n.Path), maxLine)}, fact{"Views", traffic.FormatCount(n.Count)}, fact{"Threshold", traffic.FormatCount(n.Threshold)})
		if n.Why != nil {
			m.facts = append(m.facts, whyFacts(n.Why)...)
		}
	}
	m.facts = append(m.facts, fact{"Window", window}, fact{"Crossed at", m.at.Format(time.RFC3339)}, fact{"Rule", clean(n.Rule, 100)})
	m.footer = "Sent by pagewatch for crossing " + clean(n.Key, 200) + "."
	return m
}

// plain is the message as plain text lines (for services without
// structure, and for fallbacks).
func (m message) plain() string {
	var b strings.Builder
	b.WriteString(m.title + "\n\n")
	for _, l := range m.intro {
		b.WriteString(l + "\n")
	}
	for _, l := range m.digest {
		b.WriteString(l + "\n")
	}
	if m.more > 0 {
		b.WriteString("...and " + strconv.Itoa(m.more) + " more\n")
	}
	return b.String()
}

// clean makes s one line of valid UTF-8: control, format and separator
// characters become U+FFFD; beyond limit runes it is cut with "…".
func clean(s string, limit int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == limit-1 && utf8.RuneCountInString(s) > limit {
			b.WriteRune('…')
			break
		}
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			r = unicode.ReplacementChar
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func orEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(empty)"
	}
	return s
}

// truncate cuts s to at most limit runes, with "…".
func truncate(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit-1]) + "…"
}
