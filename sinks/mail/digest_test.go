package mail_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/pipeline/notify"
)

func TestDigestListsFoldedPagesSafely(t *testing.T) {
	n := testNotification()
	n.Path = "/blog/*"
	n.DigestTotal = 1500
	for i := 0; i < 1200; i++ {
		n.Digest = append(n.Digest, notify.DigestItem{Path: fmt.Sprintf("/blog/post-%d", i), Count: uint64(5000 - i), Threshold: 1000})
	}
	n.Digest[0].Path = "/blog/<script>alert(1)</script>\r\nBcc: victim@example.com"
	p := sendToFile(t, n)

	if want := "[pagewatch] 1,500 pages matching /blog/* passed their thresholds"; p.Subject != want {
		t.Errorf("subject %q, want %q", p.Subject, want)
	}
	for _, body := range []string{p.Text, p.HTML} {
		if !strings.Contains(body, "/blog/post-999") || strings.Contains(body, "/blog/post-1000") {
			t.Errorf("want the first 1000 pages listed, no more")
		}
		if !strings.Contains(body, "500 more, in the crossings history") {
			t.Errorf("want the unlisted ones counted:\n%.500s", body)
		}
		if strings.Contains(body, "\nBcc:") {
			t.Errorf("hostile path broke a line:\n%.800s", body)
		}
	}
	if strings.Contains(p.HTML, "<script>") {
		t.Errorf("hostile path got into the HTML unescaped")
	}
	if strings.Contains(p.Text, "Views:      1,500") {
		t.Error("a digest has no single view count to show")
	}
}

func TestRuleSubjectAndBody(t *testing.T) {
	n := testNotification()
	n.Subject = "Pricing is hot\r\nBcc: victim@example.com"
	n.Body = "Line one <b>bold?</b>\nLine two"
	p := sendToFile(t, n)
	if strings.ContainsAny(p.Subject, "\r\n") || !strings.HasPrefix(p.Subject, "Pricing is hot") {
		t.Errorf("subject %q", p.Subject)
	}
	if !strings.Contains(strings.ReplaceAll(p.Text, "\r\n", "\n"), "Line one <b>bold?</b>\nLine two\n") {
		t.Errorf("text body:\n%s", p.Text)
	}
	if !strings.Contains(p.HTML, "Line one &lt;b&gt;bold?&lt;/b&gt;<br>Line two") {
		t.Errorf("html body:\n%s", p.HTML)
	}
}
