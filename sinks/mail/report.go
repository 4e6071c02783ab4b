package mail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	htmltemplate "html/template"
	texttemplate "text/template"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/report"
	gomail "github.com/wneessen/go-mail"
)

// reportView is what the report templates see: stranger-written paths
// cleaned and bounded, numbers formatted.
type reportView struct {
	Subject, Site, Span, Period, Key string
	Total, PrevTotal, Change         string
	Top                              int
	Pages, Risers, Fallers, New      []reportRow
	Milestones                       []reportRow
	HasChart                         bool
	ChartCID                         htmltemplate.URL
	ChartStep                        string
	ChartW, ChartH                   int
}

type reportRow struct {
	Rank, Path, Views, Prev, Change, Milestone string
}

func newReportView(r report.Report) reportView {
	v := reportView{Subject: clean(r.Subject(), maxSubjectRunes), Site: clean(r.Site, maxLabelRunes), Span: r.SpanText(), Period: r.Period,
		Key: clean(r.Key, maxLabelRunes), Total: traffic.FormatCount(r.Total), PrevTotal: traffic.FormatCount(r.PrevTotal), Change: report.Change(r.Total, r.PrevTotal), Top: r.Top}
	row := func(p report.Page) reportRow {
		rank := ""
		if p.Rank > 0 {
			rank = fmt.Sprint(p.Rank)
		}
		return reportRow{Rank: rank, Path: orPlaceholder(clean(p.Path, maxReferrerRunes)), Views: traffic.FormatCount(p.Views),
			Prev: traffic.FormatCount(p.PrevViews), Change: report.Change(p.Views, p.PrevViews)}
	}
	for _, l := range []struct {
		in  []report.Page
		out *[]reportRow
	}{{r.Pages, &v.Pages}, {r.Risers, &v.Risers}, {r.Fallers, &v.Fallers}, {r.New, &v.New}} {
		for _, p := range l.in {
			*l.out = append(*l.out, row(p))
		}
	}
	for _, m := range r.Milestones {
		v.Milestones = append(v.Milestones, reportRow{Path: orPlaceholder(clean(m.Path, maxReferrerRunes)), Milestone: traffic.FormatCount(m.Milestone), Views: traffic.FormatCount(m.Total)})
	}
	return v
}

// reportChart draws the report's buckets: hours or days across the period.
func reportChart(r report.Report) *chart {
	if len(r.Buckets) == 0 {
		return nil
	}
	step := 24 * time.Hour
	if r.Period == report.PeriodDay {
		step = time.Hour
	}
	c := &chart{start: r.Cur.From.UTC(), end: r.Cur.To.UTC(), step: step, mark: -1}
	for _, b := range r.Buckets {
		c.buckets = append(c.buckets, b.Views)
	}
	return c
}

const reportText = `{{.Subject}}

{{.Total}} views on {{.Site}} ({{.Span}}): {{.Change}} on the {{.Period}} before ({{.PrevTotal}}).
{{- if .HasChart}}
Views per {{.ChartStep}}: the chart is in the HTML version of this message.
{{- end}}
{{- define "rows"}}{{range .}}
{{printf "%4s" .Rank}}. {{printf "%12s" .Views}}  {{printf "%6s" .Change}}  {{.Path}}{{end}}{{end}}
{{- if .Pages}}

Top {{.Top}} (views, change on the {{.Period}} before):{{template "rows" .Pages}}
{{- end}}
{{- if .Risers}}

Up the most:{{range .Risers}}
{{printf "%12s" .Views}}  was {{printf "%12s" .Prev}}  {{.Path}}{{end}}
{{- end}}
{{- if .Fallers}}

Down the most:{{range .Fallers}}
{{printf "%12s" .Views}}  was {{printf "%12s" .Prev}}  {{.Path}}{{end}}
{{- end}}
{{- if .New}}

New in the top {{.Top}}:{{range .New}}
  #{{.Rank}}  {{.Path}}{{end}}
{{- end}}
{{- if .Milestones}}

Milestones reached:{{range .Milestones}}
{{printf "%12s" .Milestone}}  {{.Path}} ({{.Views}} views all time){{end}}
{{- end}}

-- 
Sent by pagewatch for report {{.Key}}.
`

const reportHTML = `<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body style="font-family: sans-serif">
<p><strong>{{.Total}}</strong> views on {{.Site}} ({{.Span}}): {{.Change}} on the {{.Period}} before ({{.PrevTotal}}).</p>
{{- if .HasChart}}
<p><img src="{{.ChartCID}}" width="{{.ChartW}}" height="{{.ChartH}}" alt="Bar chart of views per {{.ChartStep}}" style="max-width: 100%; height: auto"></p>
{{- end}}
{{- define "list"}}
<table cellpadding="4">
<tr><th align="right">#</th><th align="right">Views</th><th align="right">Before</th><th align="right">Change</th><th align="left">Page</th></tr>
{{- range .}}
<tr><td align="right">{{.Rank}}</td><td align="right">{{.Views}}</td><td align="right">{{.Prev}}</td><td align="right">{{.Change}}</td><td style="word-break: break-all"><code>{{.Path}}</code></td></tr>
{{- end}}
</table>
{{- end}}
{{- if .Pages}}<p><strong>Top {{.Top}}</strong></p>{{template "list" .Pages}}{{end}}
{{- if .Risers}}<p><strong>Up the most</strong></p>{{template "list" .Risers}}{{end}}
{{- if .Fallers}}<p><strong>Down the most</strong></p>{{template "list" .Fallers}}{{end}}
{{- if .New}}<p><strong>New in the top {{.Top}}</strong></p>{{template "list" .New}}{{end}}
{{- if .Milestones}}
<p><strong>Milestones reached</strong></p>
<table cellpadding="4">
<tr><th align="right">Milestone</th><th align="right">All time</th><th align="left">Page</th></tr>
{{- range .Milestones}}
<tr><td align="right">{{.Milestone}}</td><td align="right">{{.Views}}</td><td style="word-break: break-all"><code>{{.Path}}</code></td></tr>
{{- end}}
</table>
{{- end}}
<p style="color: #888">Sent by pagewatch for report {{.Key}}.</p>
</body>
</html>
`

var (
	reportTextTmpl = texttemplate.Must(texttemplate.New("report").Option("missingkey=error").Parse(reportText))
	reportHTMLTmpl = htmltemplate.Must(htmltemplate.New("report").Option("missingkey=error").Parse(reportHTML))
)

// SendReport mails a scheduled report, with its chart inline, to to.
// Its Message-ID comes from the report's key, so a report mailed twice
// carries the same one.
func (s *Sender) SendReport(ctx context.Context, r report.Report, to []string) error {
	if len(to) == 0 {
		return &SendError{err: permanent(errors.New("report " + r.Key + ": no recipients"))}
	}
	m, err := s.reportMessage(r, to)
	if err == nil {
		err = s.transport.send(ctx, r.Key, m)
	}
	if err != nil {
		return &SendError{err: fmt.Errorf("send report %s to %d recipients: %w", r.Key, len(to), err)}
	}
	return nil
}

func (s *Sender) reportMessage(r report.Report, to []string) (*gomail.Msg, error) {
	v := newReportView(r)
	cid := "chart." + crossing.MessageID(r.Key)
	var chartPNG []byte
	if c := reportChart(r); c != nil {
		var err error
		if chartPNG, err = c.png(); err != nil {
			return nil, err
		}
		v.HasChart, v.ChartCID, v.ChartStep, v.ChartW, v.ChartH = true, htmltemplate.URL("cid:"+cid), c.stepText(), chartW, chartH
	}
	var text, html bytes.Buffer
	if err := reportTextTmpl.Execute(&text, v); err != nil {
		return nil, fmt.Errorf("render report text: %w", err)
	}
	if err := reportHTMLTmpl.Execute(&html, v); err != nil {
		return nil, fmt.Errorf("render report html: %w", err)
	}
	m := gomail.NewMsg()
	if err := m.From(s.render.from); err != nil {
		return nil, permanent(fmt.Errorf("from address: %w", err))
	}
	if err := m.To(to...); err != nil {
		return nil, permanent(fmt.Errorf("recipient address: %w", err))
	}
	m.Subject(v.Subject)
	m.SetMessageIDWithValue(crossing.MessageID(r.Key))
	m.SetDate()
	m.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	m.SetBodyString(gomail.TypeTextPlain, text.String())
	m.AddAlternativeString(gomail.TypeTextHTML, html.String())
	if chartPNG != nil {
		m.EmbedReadSeeker(chartFile, bytes.NewReader(chartPNG),
			gomail.WithFileContentID("<"+cid+">"),
			gomail.WithFileContentType(gomail.ContentType("image/png")))
	}
	return m, nil
}
