package mail_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/report"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// A report's paths are strangers' text: escaped in the HTML, one line in
// the text; the chart is inline.
func TestReportMailEscapesPaths(t *testing.T) {
	dir := t.TempDir()
	s := newSender(t, fileConfig(dir))
	from := time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)
	hostile := "/<script>alert(1)</script>\r\nBcc: x@evil.example"
	r := report.Report{Key: "report.weekly.1", Name: "weekly", Site: "example.com", Period: report.PeriodWeek, Zone: "UTC", Top: 3,
		Cur: report.Span{From: from, To: from.AddDate(0, 0, 7)}, Prev: report.Span{From: from.AddDate(0, 0, -7), To: from},
		Total: 10, PrevTotal: 5,
		Pages:  []report.Page{{Path: hostile, Views: 10, PrevViews: 5, Rank: 1, PrevRank: 1}},
		Risers: []report.Page{{Path: hostile, Views: 10, PrevViews: 5, Rank: 1, PrevRank: 1}},
	}
	for i := range 7 {
		r.Buckets = append(r.Buckets, report.Bucket{At: from.AddDate(0, 0, i), Views: uint64(i)})
	}
	if err := s.SendReport(t.Context(), r, []string{"ops@example.com"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, mail.FileName(r.Key)))
	if err != nil {
		t.Fatal(err)
	}
	p := parseMessage(t, data)
	if strings.Contains(p.HTML, "<script>") || !strings.Contains(p.HTML, "&lt;script&gt;") {
		t.Errorf("path not escaped in HTML:\n%s", p.HTML)
	}
	if strings.Contains(p.Text, "\nBcc:") || p.Header.Get("Bcc") != "" {
		t.Errorf("path broke a line:\n%s", p.Text)
	}
	if len(p.Images) != 1 || !strings.Contains(p.Text, "Views per day") {
		t.Errorf("chart: %d images", len(p.Images))
	}
	if p.Subject != "[pagewatch] Weekly report for example.com: 2026-11-16 – 2026-11-22" {
		t.Errorf("subject %q", p.Subject)
	}
}
