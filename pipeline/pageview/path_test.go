package pageview_test

import (
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

func normalizer(t testing.TB, edit func(*pageview.Config)) *pageview.Normalizer {
	t.Helper()
	cfg := pageview.DefaultConfig()
	if edit != nil {
		edit(&cfg)
	}
	n, err := pageview.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// notAPath marks a target that Path must refuse.
const notAPath = "\x00refused"

func checkPaths(t *testing.T, n *pageview.Normalizer, cases map[string]string) {
	t.Helper()
	for target, want := range cases {
		got, ok := n.Path(target)
		if !ok {
			got = notAPath
		}
		if got != want {
			t.Errorf("Path(%q) = %q, want %q", target, got, want)
		}
	}
}

func TestPathDefaults(t *testing.T) {
	checkPaths(t, normalizer(t, nil), map[string]string{
		"/":                      "/",
		"/a/b.html":              "/a/b.html",
		"/a?x=1":                 "/a",
		"/a?x=1#frag":            "/a",
		"/a#frag?x=1":            "/a",
		"/a/?":                   "/a/",
		"/A/B/":                  "/A/B/", // case and trailing slash kept by default
		"/blog/tags/puppet?flav": "/blog/tags/puppet",

		// Absolute form (proxies) keeps only the path.
		"http://example.com/a/b?x=1":   "/a/b",
		"HTTPS://Example.com":          "/",
		"http://example.com?x=1":       "/",
		"http://example.com#x":         "/",
		"http://user@host:8080/p/./q":  "/p/q",
		"https://h/%7euser":            "/~user",
		"ftp://example.com/a":          notAPath,
		"http:/a":                      notAPath,
		"*":                            notAPath, // OPTIONS * HTTP/1.1
		"example.com:443":              notAPath, // CONNECT
		"":                             notAPath,
		"a/b":                          notAPath,
		"\x16\x03\x01\x02\x00\x01\x00": notAPath, // TLS to port 80

		// Percent-encoding (RFC 3986 6.2.2).
		"/%7euser/%41%62%2D%2e%5F%7E": "/~user/Ab-._~",
		"/a%2fb":                      "/a%2Fb", // an encoded '/' is not a separator
		"/a%3f%23%25":                 "/a%3F%23%25",
		"/%c3%a9t%C3%A9":              "/%C3%A9t%C3%A9",
		"/caf\xc3\xa9":                "/caf%C3%A9", // raw UTF-8 as a browser sends it
		"/a b":                        "/a%20b",
		`/a"<>\^{|}` + "`":            "/a%22%3C%3E%5C%5E%7B%7C%7D%60",
		"/!$&'()*+,;=:@":              "/!$&'()*+,;=:@",
		"/a[b]":                       "/a%5Bb%5D",

		// Invalid escapes stay as they are.
		"/%":        "/%",
		"/%zz%4":    "/%zz%4",
		"/%%41":     "/%%41",  // "/%A" would be safe, but the rule is simple
		"/%%61b":    "/%%61b", // not "/%ab", which would decode next time
		"/%4%31":    "/%4%31",
		"/%%%":      "/%%%",
		"/100%25":   "/100%25",
		"/100%":     "/100%",
		"/a%2":      "/a%2",
		"/%g0%0g":   "/%g0%0g",
		"/%%2e%2e/": "/%../",

		// Dot segments, as servers resolve them.
		"/a/./b/../c":        "/a/c",
		"/../../etc/passwd":  "/etc/passwd",
		"/%2e%2e/%2E%2E/etc": "/etc",
		"/a/..":              "/",
		"/a/.":               "/a/",
		"/.":                 "/",
		"/..":                "/",
		"/...":               "/...",
		"/a/..b/.c":          "/a/..b/.c",
		// Runs of slashes are one, as nginx (merge_slashes) and Apache
		// serve them, before dot segments are resolved.
		"/a//../b": "/b",
		"//a":      "/a",
		"/a///b//": "/a/b/",
		// A servlet's session id in the path is no page of its own.
		"/shop;jsessionid=0A1B2C/cart": "/shop/cart",
		"/shop/cart;JSESSIONID=0A1B2C": "/shop/cart",
		"/shop;jsessionid=x;v=2?q=1":   "/shop;v=2",
		"/shop;other=1":                "/shop;other=1",
		"/a/;jsessionid=x/b":           "/a/b",
		"/;jsessionid=x/b":             "/b",

		// Hostile bytes never come out raw.
		"/%00":              "/%00",
		"/a%0a%0D":          "/a%0A%0D",
		"/a\x00b\nc\rd\x7f": "/a%00b%0Ac%0Dd%7F",
		"/\xff\xfe":         "/%FF%FE",
		"/%C0%AE%C0%AE/x":   "/%C0%AE%C0%AE/x", // overlong "..": stays encoded
		"/\xc0\xae\xc0\xae": "/%C0%AE%C0%AE",
		"/\xed\xa0\x80":     "/%ED%A0%80", // a UTF-16 surrogate

		// The logger's escapes: Apache \" \\ \xHH, nginx \xHH, JSON \uXXXX.
		`/caf\xC3\xA9`:    "/caf%C3%A9",
		`/a\x0Ab`:         "/a%0Ab",
		`/q\"x\"`:         "/q%22x%22",
		`/a\\b`:           "/a%5Cb",
		`/a\u0000b\/c`:    "/a%00b/c",
		`/a\u00e9`:        "/a%E9",
		`/a\u2028`:        "/a%E2%80%A8",
		`/a\nb\tc`:        "/a%0Ab%09c",
		`/a\qb\`:          "/a%5Cqb%5C",
		`\x2Fabc`:         "/abc",
		`/a\x2e\x2e/../b`: "/b",
	})
}

func TestPathOptions(t *testing.T) {
	checkPaths(t, normalizer(t, func(c *pageview.Config) { c.TrailingSlash = "strip" }), map[string]string{
		"/":           "/",
		"//":          "/",
		"/a/":         "/a",
		"/a///":       "/a",
		"/a/?x=1":     "/a",
		"/a/.":        "/a",
		"/a/b/..":     "/a",
		"/a%2F":       "/a%2F",
		"http://h/":   "/",
		"http://h/a/": "/a",
	})
	checkPaths(t, normalizer(t, func(c *pageview.Config) { c.Lowercase = true }), map[string]string{
		"/About/Team": "/about/team",
		"/%41%42":     "/ab",
		"/a%2f%c3%A9": "/a%2F%C3%A9", // escapes keep upper-case hex
		"/%%61b":      "/%%61b",
		"/%Ag":        "/%ag",
		"/A?Page=B":   "/a",
		"/ÉTÉ":        "/%C3%89t%C3%89", // only ASCII letters fold
	})
	checkPaths(t, normalizer(t, func(c *pageview.Config) {
		c.KeepQuery = []string{"page", "lang", "utm%5fsource"}
		c.Lowercase = true
	}), map[string]string{
		"/Blog?page=2&utm_medium=x": "/blog?page=2",
		"/b?page=2&lang=de":         "/b?lang=de&page=2",
		"/b?lang=de&page=2":         "/b?lang=de&page=2",
		"/b?utm=1":                  "/b",
		"/b?page":                   "/b?page",
		"/b?page=":                  "/b?page=",
		"/b?pag%65=1":               "/b?page=1",
		"/b?page=%7e%2f%26%3D":      "/b?page=~%2F%26%3D",
		"/b?page=A B":               "/b?page=A%20B", // values keep their case
		"/b?&&page=1&":              "/b?page=1",
		"/b?page=2&page=1":          "/b?page=1&page=2",
		"/b?page=1?x=2":             "/b?page=1?x=2",
		"/b?page=1#lang=de":         "/b?page=1",
		"/b?utm_source=x":           "/b?utm_source=x",
		"/b?Page=1":                 "/b", // names are case-sensitive
		"/b?page=\n\x00":            "/b?page=%0A%00",
		"/b?page=1;lang=de":         "/b?page=1;lang=de",
		"http://h?lang=en":          "/?lang=en",
	})
}

func TestPathLengthCap(t *testing.T) {
	n := normalizer(t, func(c *pageview.Config) { c.MaxPathBytes = 64; c.KeepQuery = []string{"q"} })
	for target, want := range map[string]string{
		"/" + strings.Repeat("a", 100): "/" + strings.Repeat("a", 63),
		"/" + strings.Repeat("é", 100): "/" + strings.Repeat("%C3%A9", 10) + "%C3", // never half an escape
		"/" + strings.Repeat("a/", 40): "/" + strings.Repeat("a/", 31) + "a",
		// A cut that leaves a dot segment is tidied again.
		"/" + strings.Repeat("a", 61) + "/.bc":             "/" + strings.Repeat("a", 61) + "/",
		"/" + strings.Repeat("a", 60) + "/..x":             "/",
		"/" + strings.Repeat("a", 50) + "?q=1&q=222222222": "/" + strings.Repeat("a", 50) + "?q=1",
		"/" + strings.Repeat("a", 50) + "?q=22222222222":   "/" + strings.Repeat("a", 50),
	} {
		got, ok := n.Path(target)
		if !ok || got != want {
			t.Errorf("Path(%q)\n = %q\nwant %q", target, got, want)
		}
		if len(got) > 64 {
			t.Errorf("Path(%q) has %d bytes", target, len(got))
		}
	}
	// The default cap, on a megabyte of hostile path.
	got, _ := normalizer(t, nil).Path("/" + strings.Repeat("\n", 1<<20))
	if len(got) != 1024 || !strings.HasSuffix(got, "%0A") {
		t.Errorf("1 MiB of newlines: %d bytes ending %q", len(got), got[len(got)-6:])
	}
}
