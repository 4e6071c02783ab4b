package demotraffic_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/internal/demotraffic"
)

// An email as the worker writes it (folded RFC 2047 subject, a
// quoted-printable text part soft-wrapped mid-word, an HTML part) reads
// as a mail client shows it.
func TestShowDecodesTheWorkersEmail(t *testing.T) {
	raw := strings.ReplaceAll(`Subject:
 =?UTF-8?q?[pagewatch]_/blog/a_is_at_66.6=C3=97_its_normal:_?=
 =?UTF-8?q?111_views_in_10_minutes?=
From: <pagewatch@demo.example>
To: <you@example.com>
Date: Sat, 28 Nov 2026 16:08:52 +0000
MIME-Version: 1.0
Content-Type: multipart/related; boundary=outer

--outer
Content-Type: multipart/alternative; boundary=inner

--inner
Content-Transfer-Encoding: quoted-printable
Content-Type: text/plain; charset=UTF-8

/blog/a is at 66.6=C3=97 its normal: 111 view=
s in 10 minutes, mostly from news.ycombinator.com.
--inner
Content-Transfer-Encoding: quoted-printable
Content-Type: text/html; charset=UTF-8

<p>html</p>
--inner--
--outer--
`, "\n", "\r\n")
	path := filepath.Join(t.TempDir(), "x.eml")
	if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := demotraffic.Show(&out, path); err != nil {
		t.Fatal(err)
	}
	want := "Subject: [pagewatch] /blog/a is at 66.6× its normal: 111 views in 10 minutes\n" +
		"From: <pagewatch@demo.example>\nTo: <you@example.com>\nDate: Sat, 28 Nov 2026 16:08:52 +0000\n\n" +
		"/blog/a is at 66.6× its normal: 111 views in 10 minutes, mostly from news.ycombinator.com.\n"
	if out.String() != want {
		t.Errorf("shown as\n%q\nwant\n%q", out.String(), want)
	}
	if s, err := demotraffic.Subject(path); err != nil || s != "[pagewatch] /blog/a is at 66.6× its normal: 111 views in 10 minutes" {
		t.Errorf("subject %q, %v", s, err)
	}
	if err := demotraffic.Show(&out, filepath.Join(t.TempDir(), "none.eml")); err == nil || !strings.Contains(err.Error(), "none.eml") {
		t.Errorf("a missing file: %v, want an error naming it", err)
	}
}
