package mail

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"slices"
	"strings"
	texttemplate "text/template"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	gomail "github.com/wneessen/go-mail"
)

// Limits on how much stranger-controlled text reaches a message. Subjects
// are kept short so mail clients show the verb; bodies get more room but a
// 10 KB URL is still noise, not information.
const (
	maxSubjectRunes = 200
	// A referrer domain named in the subject ("mostly from ...").
	maxSubjectDomainRunes = 60
	maxBodyRunes          = 2000
	maxLabelRunes         = 100 // rule, window, key: ours, but cheap to bound
	// A referrer is one line of a list: room for a real URL, not for a
	// stranger's essay.
	maxReferrerRunes = 200
	maxReferrers     = 10
	maxBodyLines     = 50
	// A digest lists this many pages; the rest are counted, and all are
	// in the crossings history.
	maxDigestLines = 1000
)

// chartFile names the inline chart: its Content-Type name and filename.
const chartFile = "chart.png"

// view is what the templates see: every field already cleaned to a single
// line of valid UTF-8 and bounded in length.
type view struct {
	Subject   string
	Key       string
	Rule      string
	Site      string
	Path      string
	Count     string
	Threshold string
	Window    string
	AllTime   bool
	CrossedAt string
	// Predicate is what happened to the page, after its name: "passed
	// 1,000 views in 1h", "is at 6.2× its normal: ...", "is back to
	// normal ..." (notify.Notification.Predicate).
	Predicate string

	WindowText string // "2025-03-04 04:06 – 05:06 UTC", or empty
	Referrers  []referrerView
	Why        *whyView // why.go; nil: no section

	Intro      []string // the rule's own body, line by line; empty: the default sentence
	Digest     []digestView
	DigestMore int // digest crossings not listed
	DigestN    string

	// The chart, when there is one. ChartCID is "cid:…" for the img src:
	// html/template would refuse the cid scheme in a plain string, and it
	// is built from a hash, never from input.
	HasChart       bool
	ChartCID       htmltemplate.URL
	ChartStep      string // "minute", "5 minutes"
	ChartW, ChartH int
	Peak           string // "04:42 UTC, 87 views"

	// A "no data" message's, of a whole site (SiteWide): when its gap
	// began (its newest hit before it), and what its tailers said of its
	// logs (crossing.Feeds.Text), or empty.
	SiteWide bool
	GapBegan string
	Logs     string

	// The recipient's links (links.go), or empty.
	Unsubscribe, Snooze, SnoozeFor string
}

type digestView struct {
	Path, Count, Threshold string
}

type referrerView struct {
	Referer string
	Hits    string
}

func newView(n notify.Notification) view {
	window := clean(n.Window, maxLabelRunes)
	allTime := window == "" || strings.EqualFold(strings.TrimSpace(window), "all time")
	if allTime {
		window = "all time"
	}
	v := view{
		Key:       clean(n.Key, maxLabelRunes),
		Rule:      clean(n.Rule, maxLabelRunes),
		Site:      orPlaceholder(clean(n.Site, maxBodyRunes)),
		Path:      orPlaceholder(clean(pageOf(n), maxBodyRunes)),
		Count:     traffic.FormatCount(n.Count),
		Threshold: traffic.FormatCount(n.Threshold),
		Window:    window,
		AllTime:   allTime,
		CrossedAt: n.CrossedAt.UTC().Format(time.RFC3339),
	}
	v.Predicate = n.Predicate(func(s string) string { return orPlaceholder(clean(s, maxSubjectDomainRunes)) })
	// The page's name gets what the predicate leaves of the subject.
	pathRunes := max(maxSubjectRunes-utf8.RuneCountInString(v.Predicate), 40)
	v.Subject = "[pagewatch] " + orPlaceholder(clean(n.Name(), pathRunes)) + " " + v.Predicate
	if n.Subject != "" {
		v.Subject = clean(n.Subject, maxSubjectRunes)
	}
	for i, line := range strings.Split(n.Body, "\n") {
		if n.Body == "" || i == maxBodyLines {
			break
		}
		v.Intro = append(v.Intro, clean(line, maxBodyRunes))
	}
	if n.Digest != nil || n.DigestTotal > 0 {
		for _, d := range n.Digest[:min(len(n.Digest), maxDigestLines)] {
			v.Digest = append(v.Digest, digestView{Path: orPlaceholder(clean(d.Path, maxReferrerRunes)), Count: traffic.FormatCount(d.Count), Threshold: traffic.FormatCount(d.Threshold)})
		}
		v.DigestMore = max(n.DigestTotal, len(n.Digest)) - len(v.Digest)
		v.DigestN = traffic.FormatCount(uint64(max(n.DigestTotal, len(n.Digest))))
		if n.Subject == "" {
			v.Subject = "[pagewatch] " + v.DigestN + " pages matching " + orPlaceholder(clean(n.Path, maxSubjectRunes)) + " passed their thresholds"
		}
	}
	if n.Why.SiteWide() {
		v.SiteWide = true
		v.GapBegan = n.Why.Since.UTC().Format("2006-01-02 15:04 UTC")
		v.Logs = clean(n.Why.Feeds.Text(), maxBodyRunes)
	}
	v.Referrers = topReferrers(n.Referrers)
	if !n.WindowStart.IsZero() && !n.WindowEnd.IsZero() {
		v.WindowText = spanText(n.WindowStart, n.WindowEnd)
	}
	return v
}

// withChart adds the chart's captions to v; cid is its Content-ID.
func (v *view) withChart(c *chart, cid string) {
	v.HasChart = true
	v.ChartCID = htmltemplate.URL("cid:" + cid)
	v.ChartStep = c.stepText()
	v.ChartW, v.ChartH = chartW, chartH
	if v.WindowText == "" {
		v.WindowText = spanText(c.start, c.end)
	}
	if c.peak > 0 {
		layout := "15:04 UTC"
		if !sameDay(c.start, c.end.Add(-time.Nanosecond)) {
			layout = "2006-01-02 15:04 UTC"
		}
		v.Peak = c.peakAt.Format(layout) + ", " + traffic.FormatViews(c.peak)
	}
}

// topReferrers keeps the maxReferrers with the most hits, in that order
// (the caller's order among equals), each cleaned to one short line.
func topReferrers(refs []traffic.Referrer) []referrerView {
	sorted := slices.Clone(refs)
	slices.SortStableFunc(sorted, func(a, b traffic.Referrer) int { return cmp.Compare(b.Hits, a.Hits) })
	out := make([]referrerView, 0, min(len(sorted), maxReferrers))
	for _, r := range sorted[:min(len(sorted), maxReferrers)] {
		out = append(out, referrerView{Referer: orPlaceholder(clean(r.Referer, maxReferrerRunes)), Hits: traffic.FormatCount(r.Hits)})
	}
	return out
}

// spanText shows [from, to) in UTC, the date once when both are on it.
func spanText(from, to time.Time) string {
	from, to = from.UTC(), to.UTC()
	if sameDay(from, to) {
		return from.Format("2006-01-02 15:04") + " – " + to.Format("15:04") + " UTC"
	}
	return from.Format("2006-01-02 15:04") + " – " + to.Format("2006-01-02 15:04") + " UTC"
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.UTC().Date()
	by, bm, bd := b.UTC().Date()
	return ay == by && am == bm && ad == bd
}

const textBody = `{{if .Intro}}{{range .Intro}}{{.}}
{{end}}{{else if .Digest}}{{.DigestN}} pages matching {{.Path}} on {{.Site}} passed their thresholds{{if not .AllTime}} in {{.Window}}{{end}} in one sweep.
Rule {{.Rule}} mails the busiest one by one; these are the rest.
{{else}}{{.Path}} on {{.Site}} {{.Predicate}}.
{{end}}
{{- if .Digest}}
{{range .Digest}}{{printf "%12s" .Count}}  {{.Path}} (threshold {{.Threshold}})
{{end}}{{if .DigestMore}}...and {{.DigestMore}} more, in the crossings history.
{{end}}
Crossed at: {{.CrossedAt}}
Rule:       {{.Rule}}
{{- else if .SiteWide}}
Site:       {{.Site}}
Gap began:  {{.GapBegan}}
{{- if .Logs}}
Logs:       {{.Logs}}{{end}}
Crossed at: {{.CrossedAt}}
Rule:       {{.Rule}}
{{- else}}
Site:       {{.Site}}
Page:       {{.Path}}
Views:      {{.Count}}
Threshold:  {{.Threshold}}
Window:     {{.Window}}
Crossed at: {{.CrossedAt}}
Rule:       {{.Rule}}
{{- end}}
{{- if .HasChart}}

Views per {{.ChartStep}}{{if .WindowText}}, {{.WindowText}}{{end}}: the chart is
in the HTML version of this message (inline image ` + chartFile + `).
{{- if .Peak}}
Busiest minute: {{.Peak}}.{{end}}
{{- end}}
{{- template "why" .}}
{{- if .Referrers}}

Top referrers{{if .WindowText}}, {{.WindowText}}{{end}}:
{{- range .Referrers}}
{{printf "%12s" .Hits}}  {{.Referer}}
{{- end}}
{{- end}}

-- 
Sent by pagewatch for crossing {{.Key}}.
{{- if .Snooze}}
Snooze this page for {{.SnoozeFor}}: {{.Snooze}}
{{- end}}
{{- if .Unsubscribe}}
Unsubscribe from rule {{.Rule}}: {{.Unsubscribe}}
{{- end}}
`

const htmlBody = `<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body style="font-family: sans-serif">
{{- if .Intro}}
<p>{{range $i, $l := .Intro}}{{if $i}}<br>{{end}}{{$l}}{{end}}</p>
{{- else if .Digest}}
<p><strong>{{.DigestN}}</strong> pages matching <strong>{{.Path}}</strong> on {{.Site}} passed their thresholds{{if not .AllTime}} in {{.Window}}{{end}} in one sweep. Rule {{.Rule}} mails the busiest one by one; these are the rest.</p>
<table cellpadding="4">
<tr><th align="right">Views</th><th align="right">Threshold</th><th align="left">Page</th></tr>
{{- range .Digest}}
<tr><td align="right">{{.Count}}</td><td align="right">{{.Threshold}}</td><td style="word-break: break-all"><code>{{.Path}}</code></td></tr>
{{- end}}
</table>
{{- if .DigestMore}}
<p>...and {{.DigestMore}} more, in the crossings history.</p>
{{- end}}
{{- else}}
<p><strong>{{.Path}}</strong> on {{.Site}} {{.Predicate}}.</p>
{{- end}}
{{- if .SiteWide}}
<table cellpadding="4">
<tr><th align="left">Site</th><td>{{.Site}}</td></tr>
<tr><th align="left">Gap began</th><td>{{.GapBegan}}</td></tr>
{{- if .Logs}}
<tr><th align="left">Logs</th><td style="word-break: break-all">{{.Logs}}</td></tr>{{end}}
<tr><th align="left">Crossed at</th><td>{{.CrossedAt}}</td></tr>
<tr><th align="left">Rule</th><td>{{.Rule}}</td></tr>
</table>
{{- else if not .Digest}}
<table cellpadding="4">
<tr><th align="left">Site</th><td>{{.Site}}</td></tr>
<tr><th align="left">Page</th><td>{{.Path}}</td></tr>
<tr><th align="left">Views</th><td>{{.Count}}</td></tr>
<tr><th align="left">Threshold</th><td>{{.Threshold}}</td></tr>
<tr><th align="left">Window</th><td>{{.Window}}</td></tr>
<tr><th align="left">Crossed at</th><td>{{.CrossedAt}}</td></tr>
<tr><th align="left">Rule</th><td>{{.Rule}}</td></tr>
</table>
{{- end}}
{{- if .HasChart}}
<p><strong>Views per {{.ChartStep}}</strong>{{if .WindowText}}, {{.WindowText}}{{end}}{{if .Peak}}; busiest minute {{.Peak}}{{end}}</p>
<p><img src="{{.ChartCID}}" width="{{.ChartW}}" height="{{.ChartH}}" alt="Bar chart of views per {{.ChartStep}}" style="max-width: 100%; height: auto"></p>
{{- end}}
{{- template "why" .}}
{{- if .Referrers}}
<p><strong>Top referrers</strong>{{if .WindowText}}, {{.WindowText}}{{end}}</p>
<table cellpadding="4">
<tr><th align="right">Views</th><th align="left">traffic.Referrer (not a link: written by visitors)</th></tr>
{{- range .Referrers}}
<tr><td align="right">{{.Hits}}</td><td style="word-break: break-all"><code>{{.Referer}}</code></td></tr>
{{- end}}
</table>
{{- end}}
<p style="color: #888">Sent by pagewatch for crossing {{.Key}}.
{{- if .Snooze}} <a href="{{.Snooze}}">Snooze this page for {{.SnoozeFor}}</a>.{{end}}
{{- if .Unsubscribe}} <a href="{{.Unsubscribe}}">Unsubscribe from rule {{.Rule}}</a>.{{end}}</p>
</body>
</html>
`

// renderer turns a Notification into a go-mail message. The templates are
// parsed once per Sender rather than kept in package variables.
type renderer struct {
	from string
	text *texttemplate.Template
	html *htmltemplate.Template
}

func newRenderer(from string) (*renderer, error) {
	text, err := texttemplate.New("text").Option("missingkey=error").Parse(textBody)
	if err != nil {
		return nil, fmt.Errorf("parse text template: %w", err)
	}
	if _, err := text.Parse(textWhy); err != nil {
		return nil, fmt.Errorf("parse text template's why: %w", err)
	}
	html, err := htmltemplate.New("html").Option("missingkey=error").Parse(htmlBody)
	if err != nil {
		return nil, fmt.Errorf("parse html template: %w", err)
	}
	if _, err := html.Parse(htmlWhy); err != nil {
		return nil, fmt.Errorf("parse html template's why: %w", err)
	}
	return &renderer{from: from, text: text, html: html}, nil
}

// message builds the email for n. Errors here are about the notification
// itself (bad recipients), so they are marked permanent: retrying cannot fix
// them.
func (r *renderer) message(n notify.Notification) (*gomail.Msg, error) {
	if len(n.Recipients) == 0 {
		return nil, permanent(errors.New("no recipients"))
	}
	v := newView(n)
	links := recipientLinks(n)
	v.Unsubscribe, v.Snooze, v.SnoozeFor = links.Unsubscribe, links.Snooze, snoozeText(links.SnoozeFor)
	var chartPNG []byte
	cid := "chart." + crossing.MessageID(n.Key) // unique per crossing, like the Message-ID
	if c := newChart(n.Series, n.WindowStart, n.WindowEnd, n.CrossedAt); c != nil {
		var err error
		if chartPNG, err = c.png(); err != nil {
			return nil, err
		}
		v.withChart(c, cid)
	}
	if n.Digest == nil && n.DigestTotal == 0 {
		v.Why = newWhyView(n.Why, v.Peak) // after the chart: its caption may say the busiest minute
	}
	var text, html bytes.Buffer
	if err := r.text.Execute(&text, v); err != nil {
		return nil, fmt.Errorf("render text body: %w", err)
	}
	if err := r.html.Execute(&html, v); err != nil {
		return nil, fmt.Errorf("render html body: %w", err)
	}

	m := gomail.NewMsg()
	if err := m.From(r.from); err != nil {
		return nil, permanent(fmt.Errorf("from address: %w", err))
	}
	if err := m.To(n.Recipients...); err != nil {
		return nil, permanent(fmt.Errorf("recipient address: %w", err))
	}
	// go-mail also RFC 2047-encodes anything unusual in headers; clean()
	// already removed CR/LF, so this is a second wall, not the only one.
	m.Subject(v.Subject)
	m.SetMessageIDWithValue(crossing.MessageID(n.Key))
	m.SetDate()
	// RFC 3834: stops vacation responders from replying to a robot.
	m.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	setListUnsubscribe(m, links)
	m.SetBodyString(gomail.TypeTextPlain, text.String())
	m.AddAlternativeString(gomail.TypeTextHTML, html.String())
	if chartPNG != nil {
		// An inline part in multipart/related, which the HTML references
		// by Content-ID; go-mail base64-encodes it.
		m.EmbedReadSeeker(chartFile, bytes.NewReader(chartPNG),
			gomail.WithFileContentID("<"+cid+">"),
			gomail.WithFileContentType(gomail.ContentType("image/png")))
	}
	return m, nil
}

// clean makes a string safe to show on one line: invalid UTF-8 and control,
// format (bidi overrides) and line/paragraph separator characters become
// U+FFFD, and text beyond limit runes is cut with an ellipsis (limit must be at least 1).
func clean(s string, limit int) string {
	var b strings.Builder
	n := 0
	for _, r := range s { // ranging over a string yields U+FFFD for bad bytes
		if n == limit {
			// Replace the last kept rune so the result stays within limit.
			out := []rune(b.String())
			return string(out[:limit-1]) + "…"
		}
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			r = unicode.ReplacementChar
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// pageOf is the page a message names in its body: "every page" for a
// message about a whole site.
func pageOf(n notify.Notification) string {
	if n.Why.SiteWide() {
		return "every page"
	}
	return n.Path
}

func orPlaceholder(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(empty)"
	}
	return s
}
