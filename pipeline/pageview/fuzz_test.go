package pageview_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

// FuzzNormalize checks what every page must be, whatever the target and
// options: printable ASCII (so valid UTF-8, no controls or newlines),
// starting with '/', within max_path_bytes, and already normal, so that
// normalising a page again gives the same page.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"/", "/a/b?c=d#e", "http://h/a", "HTTPS://h?x", "*", "h:443", "",
		"/%00%0a%0D", "/a\x00\n\r\x7f", "/%C0%AE%C0%AE/", "/\xc0\xae\xff",
		"/../a/./b/..", "/%2e%2E/", "/%%61b", "/%4%31", "/%", "/%zz",
		`/caf\xC3\xA9`, `/q\"x\\`, `/a\u0000\u2028\/`, `\x2F..`,
		"/b?page=2&lang=de&a=1", "/b?&&a=%7e&b=%2F", "/A/B//",
		"/" + strings.Repeat("é", 40), "/" + strings.Repeat("a/.", 30),
	} {
		for flags := range uint8(16) {
			f.Add([]byte(s), flags)
		}
	}
	normalizers := make([]*pageview.Normalizer, 16)
	maxBytes := make([]int, 16)
	for flags := range normalizers {
		cfg := pageview.DefaultConfig()
		cfg.Lowercase = flags&1 != 0
		if flags&2 != 0 {
			cfg.TrailingSlash = "strip"
		}
		if flags&4 != 0 {
			cfg.KeepQuery = []string{"a", "b", "page", "lang"}
		}
		if flags&8 != 0 {
			cfg.MaxPathBytes = 64
		}
		n, err := pageview.New(cfg)
		if err != nil {
			f.Fatal(err)
		}
		normalizers[flags], maxBytes[flags] = n, cfg.MaxPathBytes
	}
	f.Fuzz(func(t *testing.T, target []byte, flags uint8) {
		n, maxLen := normalizers[flags%16], maxBytes[flags%16]
		page, ok := n.Path(string(target))
		if !ok {
			return
		}
		if page == "" || page[0] != '/' {
			t.Fatalf("%q: page %q does not start with '/'", target, page)
		}
		if len(page) > maxLen {
			t.Fatalf("%q: page has %d bytes, more than %d", target, len(page), maxLen)
		}
		if !utf8.ValidString(page) {
			t.Fatalf("%q: page %q is not UTF-8", target, page)
		}
		for i := 0; i < len(page); i++ {
			if c := page[i]; c <= ' ' || c >= 0x7f || c == '#' || c == '\\' {
				t.Fatalf("%q: page %q holds %q at %d", target, page, c, i)
			}
		}
		again, ok := n.Path(page)
		if !ok || again != page {
			t.Fatalf("%q: page %q normalises to %q (ok %v)", target, page, again, ok)
		}
		// Fill records the same page, whatever else the line holds.
		e := logformat.Entry{Method: []byte("GET"), Target: target, Status: 200, UserAgent: target}
		var h hit.Hit
		if drop := n.Fill(&h, &e, "s"); drop == "" && h.Path != page {
			t.Fatalf("%q: Fill recorded %q, Path gives %q", target, h.Path, page)
		}
	})
}
