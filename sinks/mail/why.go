package mail

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// whyView is a crossing's why as the templates show it, every field
// already text: the referrer domains come from referers, which anyone
// can send, so they are cleaned like paths (and html/template escapes
// them again in the HTML part).
type whyView struct {
	Normal string // "20 views an hour window", or empty
	Ratio  string // "5.0 × normal", or empty
	Burst  string // "20 views in 10 minutes, expected 0–3 (now 6.1×)": what a burst fired on, or empty
	// BurstLabel names it: "Fired on burst", or "Fired on hours" for a
	// drop heard on its hours together.
	BurstLabel string
	// Before is what a surge heard against the hours before its window
	// was measured against (crossing.Why.BeforeText), or empty.
	Before    string
	Fires     string // "the rule fires at 4 × normal", or empty
	Rank      string // "2nd of 3 pages on the site in the window", or empty
	Busiest   string // "10:42 UTC, 70 views", or empty (the chart's caption says it)
	Since     string // the episode's start, or empty
	Referrers []domainView
	New       string // "news.example, blog.example", or empty
	// Clients and Classes are who sent the window's views: "1,000 views
	// from 3 visitors; one client sent 82% (mostly one client)" and
	// "bots 40% of hits, AI crawlers 5%". Numbers and class names only.
	Clients, Classes string
}

type domainView struct {
	Domain, Share, BaselineShare string
	New                          bool
}

// maxNewDomains bounds the "new referrers" line.
const maxNewDomains = 10

// newWhyView is nil when there is nothing worth a section: no why, or a
// why with nothing beyond the count shown above it.
func newWhyView(w *crossing.Why, chartPeak string) *whyView {
	if w == nil || w.SiteWide() {
		return nil // a site's "no data": its facts say it all
	}
	v := &whyView{}
	if !w.ByThreshold() {
		switch {
		case w.NewPage():
			v.Normal = "no views before"
		case w.ExpectedText() != "":
			v.Normal = w.ExpectedText()
		case w.Baseline > 0:
			v.Normal = trimFloat(w.Baseline) + " views in a normal window"
		default:
			v.Normal = "no views in a normal window"
		}
		if w.Ratio > 0 {
			v.Ratio = strconv.FormatFloat(w.Ratio, 'f', 1, 64) + " × normal"
		}
		v.Burst, v.BurstLabel = w.BurstLine(), w.BurstLabel()
		v.Before = w.BeforeText()
		if w.Factor > 0 {
			v.Fires = "the rule fires at " + trimFloat(w.Factor) + " × normal"
			if w.Direction == "down" {
				v.Fires = "the rule fires at 1/" + trimFloat(w.Factor) + " of normal"
			}
		}
		if !w.Since.IsZero() {
			v.Since = w.Since.UTC().Format("2006-01-02 15:04 UTC")
		}
	}
	if w.Rank > 0 && w.RankOf > 0 {
		v.Rank = fmt.Sprintf("%s of %s pages with views on the site in the window", ordinal(w.Rank), traffic.FormatCount(uint64(w.RankOf)))
	}
	if !w.BusiestMinute.IsZero() && chartPeak == "" {
		v.Busiest = w.BusiestMinute.UTC().Format(time.DateTime[:16]+" UTC") + ", " + traffic.FormatViews(w.BusiestHits)
	}
	isNew := map[string]bool{}
	for _, d := range w.NewReferrers {
		isNew[d] = true
	}
	for _, r := range w.Referrers[:min(len(w.Referrers), maxReferrers)] {
		v.Referrers = append(v.Referrers, domainView{Domain: orPlaceholder(clean(r.Domain, maxReferrerRunes)),
			Share: percent(r.Share), BaselineShare: percent(r.BaselineShare), New: isNew[r.Domain]})
	}
	var news []string
	for _, d := range w.NewReferrers[:min(len(w.NewReferrers), maxNewDomains)] {
		news = append(news, clean(d, maxReferrerRunes))
	}
	v.New = strings.Join(news, ", ")
	v.Clients, v.Classes = w.Clients.Text(), w.Clients.ClassesText()
	if m := w.Clients.MostlyText(); m != "" {
		v.Clients = strings.TrimPrefix(v.Clients+" ("+m+")", " ")
	}
	if v.Normal == "" && v.Rank == "" && v.Busiest == "" && len(v.Referrers) == 0 && v.New == "" && v.Clients == "" && v.Classes == "" {
		return nil // a threshold crossing told nothing more than its count
	}
	return v
}

func percent(f float64) string { return strconv.FormatFloat(f*100, 'f', 0, 64) + "%" }

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func ordinal(n int) string {
	s := strconv.Itoa(n)
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return s + "th"
	case n%10 == 1:
		return s + "st"
	case n%10 == 2:
		return s + "nd"
	case n%10 == 3:
		return s + "rd"
	}
	return s + "th"
}

// The why's parts of the text and HTML bodies, parsed into the same
// templates as message.go's ({{template "why" .}}), given the view.
const textWhy = `{{define "why"}}{{with .Why}}

Why:
{{- if .Normal}}
  Normal:         {{.Normal}}{{if .Ratio}}; now {{.Ratio}}{{end}}{{if .Fires}} ({{.Fires}}){{end}}{{end}}
{{- if .Burst}}
  {{.BurstLabel}}: {{.Burst}}{{end}}
{{- if .Before}}
  Hours before:   {{.Before}}{{end}}
{{- if .Since}}
  Since:          {{.Since}}{{end}}
{{- if .Rank}}
  Rank:           {{.Rank}}{{end}}
{{- if .Busiest}}
  Busiest minute: {{.Busiest}}{{end}}
{{- if .Clients}}
  Visitors:       {{.Clients}}{{end}}
{{- if .Classes}}
  Clients:        {{.Classes}}{{end}}
{{- if .Referrers}}
  Referrer domains, share of referred views in the window and in the week before:
{{- range .Referrers}}
  {{printf "%6s" .Share}} {{printf "%6s" .BaselineShare}}  {{.Domain}}{{if .New}} (new){{end}}
{{- end}}{{end}}
{{- if .New}}
  New referrer domains: {{.New}}{{end}}
{{- end}}{{end}}`

const htmlWhy = `{{define "why"}}{{with .Why}}
<p><strong>Why</strong></p>
<table cellpadding="4">
{{- if .Normal}}
<tr><th align="left">Normal</th><td>{{.Normal}}{{if .Ratio}}; now {{.Ratio}}{{end}}{{if .Fires}} ({{.Fires}}){{end}}</td></tr>{{end}}
{{- if .Burst}}
<tr><th align="left">{{.BurstLabel}}</th><td>{{.Burst}}</td></tr>{{end}}
{{- if .Before}}
<tr><th align="left">Hours before</th><td>{{.Before}}</td></tr>{{end}}
{{- if .Since}}
<tr><th align="left">Since</th><td>{{.Since}}</td></tr>{{end}}
{{- if .Rank}}
<tr><th align="left">Rank</th><td>{{.Rank}}</td></tr>{{end}}
{{- if .Busiest}}
<tr><th align="left">Busiest minute</th><td>{{.Busiest}}</td></tr>{{end}}
{{- if .Clients}}
<tr><th align="left">Visitors</th><td>{{.Clients}}</td></tr>{{end}}
{{- if .Classes}}
<tr><th align="left">Clients</th><td>{{.Classes}}</td></tr>{{end}}
{{- if .New}}
<tr><th align="left">New referrer domains</th><td style="word-break: break-all"><code>{{.New}}</code></td></tr>{{end}}
</table>
{{- if .Referrers}}
<table cellpadding="4">
<tr><th align="right">Window</th><th align="right">Week before</th><th align="left">Referrer domain (not a link: written by visitors)</th></tr>
{{- range .Referrers}}
<tr><td align="right">{{.Share}}</td><td align="right">{{.BaselineShare}}</td><td style="word-break: break-all"><code>{{.Domain}}</code>{{if .New}} (new){{end}}</td></tr>
{{- end}}
</table>
{{- end}}
{{- end}}{{end}}`
