package pageview

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/classify"
)

// keyPrefix is where Config sits in the YAML file; errors name full keys
// so a person can find the line to fix.
const keyPrefix = "ingest.tail.pages"

// Config is the `ingest.tail.pages:` section. Each filter is a list; an
// empty list ([]) turns that filter off, and a list given in the file
// replaces the default one rather than adding to it.
type Config struct {
	// KeepQuery names the query parameters that make a different page,
	// e.g. [page, lang]; every other parameter is dropped. Kept ones are
	// sorted by name, so ?b=1&a=2 and ?a=2&b=1 are one page.
	KeepQuery []string `yaml:"keep_query"`
	// TrailingSlash is "keep" (/a/ and /a are two pages) or "strip"
	// (one page, /a). The root "/" is never stripped.
	TrailingSlash string `yaml:"trailing_slash"`
	// Lowercase folds the path's ASCII letters, for servers that ignore
	// case (IIS, case-insensitive file systems). Query values keep theirs.
	Lowercase bool `yaml:"lowercase"`
	// MaxPathBytes caps a stored path, query included: a client can send
	// kilobytes of path, and every distinct one is a row and a page.
	MaxPathBytes int `yaml:"max_path_bytes"`
	// Methods are the request methods counted, as logged (upper case).
	Methods []string `yaml:"methods"`
	// Statuses are the response statuses counted: a class such as "2xx"
	// or a code such as "304".
	Statuses []string `yaml:"statuses"`
	// StaticExtensions are file extensions of what a page pulls in while
	// it renders (stylesheets, scripts, images, fonts); requests for them
	// are not page views. Compared without case.
	StaticExtensions []string `yaml:"static_extensions"`
	// Bots are extra substrings of the user agent, compared without case,
	// that mark bots beyond the maintained crawler list (classify): feed
	// readers, scripts and crawlers the list misses.
	Bots []string `yaml:"bots"`
	// CountClasses are the client classes (hit.Class names: human, bot,
	// ai_agent, ai_crawler, unknown) whose hits count as page views. Hits
	// of the others are kept, marked as not counted. Unknown is counted by
	// default: the common log format logs no user agent.
	CountClasses []string `yaml:"count_classes"`
	// Sites lists the sites a line may name by its virtual host (the
	// Host header: the client's to choose), as host names or
	// "*.example.com" for its subdomains; lines naming another are not
	// counted (reason site_not_listed). Empty: any site. An input's own
	// site: is always counted.
	Sites []string `yaml:"sites"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
//
// They count what a person counting views means: a browser showing a page.
// GET only, since no browser navigates with HEAD (link checkers and
// monitors do). 2xx and 304: a 304 is a view of a cached copy, while a
// redirect (3xx) is counted at its destination and errors are no view.
// Documents (.html, .pdf, .txt, .xml) stay pages; only what a page pulls
// in is static.
func DefaultConfig() Config {
	return Config{
		TrailingSlash: "keep",
		MaxPathBytes:  1024,
		Methods:       []string{"GET"},
		Statuses:      []string{"2xx", "304"},
		StaticExtensions: []string{
			"css", "js", "mjs", "map",
			"png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "avif", "bmp",
			"woff", "woff2", "ttf", "otf", "eot",
			"webmanifest", "mp4", "webm", "mp3",
		},
		Bots:         classify.DefaultExtra(),
		CountClasses: []string{hit.ClassHuman.String(), hit.ClassAIAgent.String(), hit.ClassUnknown.String()},
	}
}

// Limits of MaxPathBytes: a few segments at least, and no more than a
// request line a server accepts.
const (
	minPathBytes = 64
	maxPathBytes = 64 << 10
)

// maxExtBytes bounds an extension, which lets the hot path fold one into
// a fixed buffer.
const maxExtBytes = 16

// Validate reports every problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", keyPrefix, key, fmt.Sprintf(format, args...)))
	}
	seen := map[string]int{}
	dup := func(list string, i int, norm string) {
		k := list + "\x00" + norm
		if j, ok := seen[k]; ok {
			add(fmt.Sprintf("%s[%d]", list, i), "same as %s[%d]", list, j)
			return
		}
		seen[k] = i
	}
	for i, name := range c.KeepQuery {
		key := fmt.Sprintf("keep_query[%d]", i)
		if msg := checkQueryName(name); msg != "" {
			add(key, "%s, got %q", msg, name)
			continue
		}
		dup("keep_query", i, string(appendComponent(nil, []byte(name), false, true)))
	}
	if c.TrailingSlash != "keep" && c.TrailingSlash != "strip" {
		add("trailing_slash", `must be "keep" or "strip", got %q`, c.TrailingSlash)
	}
	if c.MaxPathBytes < minPathBytes || c.MaxPathBytes > maxPathBytes {
		add("max_path_bytes", "must be %d..%d, got %d", minPathBytes, maxPathBytes, c.MaxPathBytes)
	}
	for i, m := range c.Methods {
		key := fmt.Sprintf("methods[%d]", i)
		switch {
		case !isToken(m):
			add(key, "must be a request method like \"GET\", got %q", m)
		case strings.ToUpper(m) != m:
			// Methods are case-sensitive and logged as sent: "get" would
			// never match a browser's GET.
			add(key, "must be upper case as logged, like %q, got %q", strings.ToUpper(m), m)
		default:
			dup("methods", i, m)
		}
	}
	for i, s := range c.Statuses {
		if _, _, ok := parseStatus(s); !ok {
			add(fmt.Sprintf("statuses[%d]", i), `must be a code like "304" or a class like "2xx", got %q`, s)
		} else {
			dup("statuses", i, strings.ToLower(s))
		}
	}
	for i, ext := range c.StaticExtensions {
		e := strings.ToLower(strings.TrimPrefix(ext, "."))
		if e == "" || len(e) > maxExtBytes || strings.Trim(e, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			add(fmt.Sprintf("static_extensions[%d]", i), "must be an extension of 1..%d letters and digits, like \"css\", got %q", maxExtBytes, ext)
		} else {
			dup("static_extensions", i, e)
		}
	}
	for i, b := range c.Bots {
		key := fmt.Sprintf("bots[%d]", i)
		if len(b) < 3 || len(b) > 128 || strings.IndexFunc(b, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			// Shorter ones match ordinary browsers ("li" in Linux, "ko" in
			// Gecko), and the matcher indexes patterns by their first three.
			add(key, "must be 3..128 printable ASCII characters, got %q", b)
		} else {
			dup("bots", i, strings.ToLower(b))
		}
	}
	for i, name := range c.CountClasses {
		if _, ok := hit.ParseClass(name); !ok {
			add(fmt.Sprintf("count_classes[%d]", i), "must be one of %s, got %q", classNames(), name)
		} else {
			dup("count_classes", i, name)
		}
	}
	for i, s := range c.Sites {
		h := strings.TrimPrefix(strings.ToLower(s), "*.")
		if h == "" || len(h) > 253 || strings.Trim(h, "abcdefghijklmnopqrstuvwxyz0123456789.-:[]") != "" || strings.HasPrefix(h, ".") {
			add(fmt.Sprintf("sites[%d]", i), `must be a host name like "example.com" or "*.example.com", got %q`, s)
		} else {
			dup("sites", i, strings.ToLower(s))
		}
	}
	return errors.Join(errs...)
}

// classNames lists the classes' names for an error message.
func classNames() string {
	var names []string
	for _, c := range hit.Classes() {
		names = append(names, c.String())
	}
	return strings.Join(names, ", ")
}

// checkQueryName says what is wrong with a keep_query entry, or "".
func checkQueryName(name string) string {
	if name == "" {
		return "must not be empty"
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '&' || c == '=' || c == '#' || c == '?':
			return "must be a parameter name, without & = # ?"
		case c <= ' ' || c == 0x7f:
			return "must not contain spaces or control characters"
		}
	}
	return ""
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar[s[i]] {
			return false
		}
	}
	return true
}

// isTchar marks the bytes of an HTTP method (RFC 9110 token).
var isTchar = func() (t [256]bool) {
	for _, c := range "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// parseStatus reads "304" as [304, 304] and "2xx" as [200, 299].
func parseStatus(s string) (lo, hi int, ok bool) {
	if len(s) != 3 || s[0] < '1' || s[0] > '9' {
		return 0, 0, false
	}
	d := int(s[0]-'0') * 100
	if (s[1] == 'x' || s[1] == 'X') && (s[2] == 'x' || s[2] == 'X') {
		return d, d + 99, true
	}
	if s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9' {
		return 0, 0, false
	}
	n := d + int(s[1]-'0')*10 + int(s[2]-'0')
	return n, n, true
}
