package rules

import (
	"strings"
	"testing"
)

func mustRule(t testing.TB, m Match) *Rule {
	t.Helper()
	r := &Rule{Name: "r", Site: "example.com", Match: m, Thresholds: Thresholds{10},
		Window: ParseWindow("1h"), Notify: Notify{Recipients: []string{"a@example.com"}}}
	if err := r.Validate("r"); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMatches(t *testing.T) {
	long := "/" + strings.Repeat("a/", 5000) + "b"
	tests := []struct {
		m    Match
		path string
		want bool
	}{
		{Match{Exact: "/pricing"}, "/pricing", true},
		{Match{Exact: "/pricing"}, "/pricing/", false},
		{Match{Exact: "/pricing"}, "/pricing?x=1", false},
		{Match{Exact: "/pricing"}, "/Pricing", false},

		{Match{Prefix: "/blog"}, "/blog", true},
		{Match{Prefix: "/blog"}, "/blogroll", true}, // a byte prefix, as documented
		{Match{Prefix: "/blog/"}, "/blog", false},
		{Match{Prefix: "/blog/"}, "/blog/x/y", true},
		{Match{Prefix: "/blog/"}, "", false},

		{Match{Glob: "/blog/*"}, "/blog/x", true},
		{Match{Glob: "/blog/*"}, "/blog/", false},
		{Match{Glob: "/blog/*"}, "/blog", false},
		{Match{Glob: "/blog/*"}, "/blog/x/y", false},
		{Match{Glob: "/blog/*"}, "/blog/x?utm=1", true},
		{Match{Glob: "/blog/*"}, "/blogx/y", false},
		{Match{Glob: "/*/edit"}, "/42/edit", true},
		{Match{Glob: "/*/edit"}, "//edit", false},
		{Match{Glob: "/docs/**"}, "/docs", true},
		{Match{Glob: "/docs/**"}, "/docs/", true},
		{Match{Glob: "/docs/**"}, "/docs/a/b/c", true},
		{Match{Glob: "/docs/**"}, "/docsx", false},
		{Match{Glob: "/docs/**"}, "/other/docs/a", false},
		{Match{Glob: "/**/edit"}, "/edit", true},
		{Match{Glob: "/**/edit"}, "/a/b/edit", true},
		{Match{Glob: "/**/edit"}, "/a/b/edit/x", false},
		{Match{Glob: "/a/**/b/**/c"}, "/a/b/c", true},
		{Match{Glob: "/a/**/b/**/c"}, "/a/x/b/y/z/c", true},
		{Match{Glob: "/a/**/b/**/c"}, "/a/x/c", false},
		{Match{Glob: "/**/**"}, "/anything/at/all", true},
		{Match{Glob: "/blog/*.html"}, "/blog/post.html", true},
		{Match{Glob: "/blog/*.html"}, "/blog/.html", true},
		{Match{Glob: "/blog/*.html"}, "/blog/a/b.html", false},
		{Match{Glob: "/blog/post-*-v*"}, "/blog/post-1-v2", true},
		{Match{Glob: "/blog/post-*-v*"}, "/blog/post-1-x2", false},
		{Match{Glob: "/blog/a*a"}, "/blog/a", false}, // pieces must not overlap
		{Match{Glob: "/blog/a*a"}, "/blog/aa", true},
		{Match{Glob: "/"}, "/", true},
		{Match{Glob: "/"}, "/x", false},
		{Match{Glob: "/**"}, "/", true},
		{Match{Glob: "/**"}, "", false},
		{Match{Glob: "/**"}, "no-slash", false},

		{Match{Regex: `/blog/\d+`}, "/blog/42", true},
		{Match{Regex: `/blog/\d+`}, "/blog/42/comments", false}, // anchored
		{Match{Regex: `/blog/\d+`}, "/x/blog/42", false},
		{Match{Regex: `/a|/b`}, "/b", true}, // the anchors wrap the alternation
		{Match{Regex: `/a|/b`}, "/ab", false},
		{Match{Regex: `/(a+)+$`}, "/" + strings.Repeat("a", 10000) + "!", false}, // RE2: no blow-up
	}
	hostile := []string{"", "/", "//", "/../../etc/passwd", "/%2e%2e/", "/a\x00b", "/\xff\xfe", long,
		"/" + strings.Repeat("/", 10000), strings.Repeat("*", 1000), "/blog/" + strings.Repeat("*", 100)}
	for _, tc := range tests {
		r := mustRule(t, tc.m)
		if got := r.Matches("example.com", tc.path); got != tc.want {
			t.Errorf("%+v Matches(%.40q) = %v, want %v", tc.m, tc.path, got, tc.want)
		}
		if r.Matches("other.example.com", tc.path) {
			t.Errorf("%+v matched %q on another site", tc.m, tc.path)
		}
		for _, p := range hostile { // must not panic or hang
			r.Matches("example.com", p)
		}
	}
}

func TestGlobHostileIsLinear(t *testing.T) {
	// Backtracking would take ~n^3 steps here; the position set takes n×7.
	r := mustRule(t, Match{Glob: "/**/a/**/a/**/b"})
	path := "/" + strings.Repeat("a/", 50000) + "c"
	if r.Matches("example.com", path) {
		t.Fatal("matched")
	}
	if !r.Matches("example.com", path[:len(path)-1]+"b") {
		t.Fatal("did not match")
	}
}

func TestMatchesDoesNotAllocate(t *testing.T) {
	for _, m := range []Match{{Exact: "/pricing"}, {Prefix: "/blog/"}, {Glob: "/docs/**/*.html"}} {
		r := mustRule(t, m)
		if n := testing.AllocsPerRun(100, func() { r.Matches("example.com", "/docs/a/b/c.html") }); n != 0 {
			t.Errorf("%+v: %v allocations per match", m, n)
		}
	}
}

func TestMatchesUnvalidatedPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	(&Rule{Site: "s", Match: Match{Exact: "/"}}).Matches("s", "/")
}
