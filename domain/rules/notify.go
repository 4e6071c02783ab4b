package rules

import (
	"fmt"
	"text/template"
	"time"
)

// TemplateData is what subject and body templates see.
type TemplateData struct {
	Rule      string
	Site      string
	Path      string // the page; for a sum rule, the rule's match as written
	Threshold uint64
	Count     uint64
	Window    string // "1h", "day", "all"
	WindowKey string // "2026-03-29" for calendar windows, else ""
	From, To  time.Time
	CrossedAt time.Time
	Labels    map[string]string
	// Pages are the matched pages' counts, for sum rules (nil otherwise).
	Pages []PageCount
}

// PageCount is one page's share of a sum rule's count.
type PageCount struct {
	Path  string
	Count uint64
}

// Sample is the data templates are checked against at load: every field
// set, so a template that reads a field or label that does not exist
// fails there and not at the first crossing.
func (r *Rule) Sample() TemplateData {
	now := time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC)
	from, to := r.Window.Bounds(now)
	labels := make(map[string]string, len(r.Notify.Labels))
	for k, v := range r.Notify.Labels {
		labels[k] = v
	}
	var threshold uint64 = 1000
	if len(r.Thresholds) > 0 {
		threshold = r.Thresholds[0]
	}
	return TemplateData{
		Rule: r.Name, Site: r.Site, Path: "/sample/page", Threshold: threshold, Count: threshold + 1,
		Window: r.Window.String(), WindowKey: r.Window.Key(now), From: from, To: to, CrossedAt: now,
		Labels: labels, Pages: []PageCount{{Path: "/sample/page", Count: threshold + 1}},
	}
}

// compileTemplate parses a template, checks it uses only parts of
// bounded cost (template.go), and runs it on the sample; "" is no
// template. missingkey=error makes a misspelt label an error.
func compileTemplate(name, text string, sample TemplateData) (*template.Template, error) {
	if text == "" {
		return nil, nil
	}
	if len(text) > MaxTemplateLen {
		return nil, fmt.Errorf("longer than %d bytes (%d)", MaxTemplateLen, len(text))
	}
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	if err := checkTemplate(t); err != nil {
		return nil, err
	}
	if _, err := runTemplate(t, sample); err != nil {
		return nil, fmt.Errorf("fails on a sample crossing: %w", err)
	}
	return t, nil
}

// Render fills the rule's subject and body templates. ok is false for one
// without a template, meaning the mailer's default. The mailer still
// cleans the subject of control characters and escapes the body for HTML.
func (r *Rule) Render(d TemplateData) (subject, body string, subjectOK, bodyOK bool, err error) {
	run := func(t *template.Template) (string, bool, error) {
		if t == nil {
			return "", false, nil
		}
		out, err := runTemplate(t, d)
		if err != nil {
			return "", false, fmt.Errorf("rule %s: %w", r.Name, err)
		}
		return out, true, nil
	}
	if subject, subjectOK, err = run(r.subject); err != nil {
		return "", "", false, false, err
	}
	body, bodyOK, err = run(r.body)
	return subject, body, subjectOK, bodyOK, err
}
