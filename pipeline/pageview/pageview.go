// Package pageview decides what a page view is: which access-log lines
// count, and under which page each is counted.
//
// A line is a page view when its method, status and file extension pass
// the filters of Config, and counts when its client's class (classify,
// from the user agent) is one of count_classes; its page is the request target normalised
// so that every spelling of one URL is one page:
//
//   - the logger's own escapes (\xHH, \", JSON's \uXXXX) are undone;
//   - an absolute-form target (http://host/path, sent to proxies) keeps its path;
//   - the fragment and every query parameter not in keep_query are dropped;
//     kept ones are sorted, so ?b=1&a=2 and ?a=2&b=1 are one page;
//   - percent-encoding is normalised (RFC 3986 6.2.2): %XX of letters,
//     digits and -._~ decoded, the hex of every other escape upper case, a
//     '%' that starts no escape kept, and every byte a URI cannot hold raw
//     (controls, space, quotes, non-ASCII) written as %XX;
//   - "." and ".." segments are removed, as servers do;
//   - optionally, trailing slashes are stripped and letters lowercased;
//   - the result is capped at max_path_bytes, never inside an escape.
//
// A page is therefore always printable ASCII starting with '/': a hostile
// target (newlines, NUL, overlong UTF-8, megabytes of path) is stored as
// visible escapes rather than dropped, so it stays countable and can never
// break a log line, a mail header or a terminal. Non-ASCII paths appear as
// browsers send them, e.g. /caf%C3%A9.
package pageview

import (
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/classify"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// Reasons Fill drops a line for; each is a fixed token, usable as a
// metric label.
const (
	DropNoRequest = "no_request" // no method or target: "-", TLS sent to port 80
	DropMethod    = "method"
	DropStatus    = "status"
	DropNotAPath  = "not_a_path" // "*" (OPTIONS), an authority (CONNECT), junk
	DropStatic    = "static"
	// DropSite: the line's virtual host names a site that sites does not
	// list (SiteListed; checked by the caller, which knows where the site
	// came from).
	DropSite = "site_not_listed"
)

// Reasons returns every reason a line is not a page view: Fill's, in the
// order Fill checks them, then SiteListed's; so callers can pre-register
// metric series at zero.
func Reasons() []string {
	return []string{DropNoRequest, DropMethod, DropStatus, DropNotAPath, DropStatic, DropSite}
}

// Normalizer applies a Config. It is immutable once made, so one can be
// shared by any number of goroutines.
type Normalizer struct {
	keep         []string // normalised parameter names
	strip        bool
	lowercase    bool
	maxBytes     int
	methods      []string // empty: any
	anyStatus    bool
	statuses     [1024 / 64]uint64 // bit per status code
	exts         map[string]struct{}
	classes      *classify.Classifier
	counts       uint32              // bit per hit.Class counted
	sites        map[string]struct{} // empty: every site
	siteSuffixes []string            // ".example.com" of "*.example.com"
}

// New checks cfg and compiles it.
func New(cfg Config) (*Normalizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Normalizer{
		strip:     cfg.TrailingSlash == "strip",
		lowercase: cfg.Lowercase,
		maxBytes:  cfg.MaxPathBytes,
		methods:   slices.Clone(cfg.Methods),
		anyStatus: len(cfg.Statuses) == 0,
		exts:      make(map[string]struct{}, len(cfg.StaticExtensions)),
	}
	for _, k := range cfg.KeepQuery {
		// Names are matched as a parameter's normalised name, so
		// "utm%5Fsource" in a log is kept by utm_source.
		n.keep = append(n.keep, string(appendComponent(nil, []byte(k), false, true)))
	}
	for _, s := range cfg.Statuses {
		lo, hi, _ := parseStatus(s)
		for c := lo; c <= hi; c++ {
			n.statuses[c/64] |= 1 << (c % 64)
		}
	}
	for _, e := range cfg.StaticExtensions {
		n.exts[string(foldASCII([]byte(trimDot(e))))] = struct{}{}
	}
	var err error
	if n.classes, err = classify.New(cfg.Bots); err != nil {
		return nil, err
	}
	if len(cfg.CountClasses) == 0 {
		n.counts = ^uint32(0)
	}
	for _, name := range cfg.CountClasses {
		c, _ := hit.ParseClass(name)
		n.counts |= 1 << c
	}
	for _, s := range cfg.Sites {
		s = strings.ToLower(s)
		if rest, ok := strings.CutPrefix(s, "*."); ok {
			n.siteSuffixes = append(n.siteSuffixes, "."+rest)
			continue
		}
		if n.sites == nil {
			n.sites = map[string]struct{}{}
		}
		n.sites[s] = struct{}{}
	}
	return n, nil
}

// Classifier is the classifier of ingest.tail.pages.bots, shared: each
// goroutine makes its own cache of it (Classifier.NewCache).
func (n *Normalizer) Classifier() *classify.Classifier { return n.classes }

// Counts reports whether hits of class c are page views to count
// (ingest.tail.pages.count_classes). The others are kept too, so that a
// page's share of bots stays known, but no view counts them.
func (n *Normalizer) Counts(c hit.Class) bool { return n.counts&(1<<c) != 0 }

// SiteListed reports whether a site taken from a line's virtual host may
// be counted: the Host header is the client's to choose, and each new
// name is a site, with its pages, in every store and page of pagewatch.
// With no sites configured every site is.
func (n *Normalizer) SiteListed(site string) bool {
	if n.sites == nil && n.siteSuffixes == nil {
		return true
	}
	if _, ok := n.sites[site]; ok {
		return true
	}
	for _, suf := range n.siteSuffixes {
		if strings.HasSuffix(site, suf) {
			return true
		}
	}
	return false
}

func trimDot(s string) string {
	if len(s) > 0 && s[0] == '.' {
		return s[1:]
	}
	return s
}

func foldASCII(b []byte) []byte {
	for i, c := range b {
		b[i] = lower[c]
	}
	return b
}

// Fill makes h the page view of e on site, or returns why e is none
// (one of the Drop reasons) and leaves h alone. Offset is the caller's.
//
// Fill allocates only the path (and a buffer for one over 256 bytes).
// h.Referer shares e's bytes, like e's own fields: it is valid until the
// line's buffer is reused, which is enough to encode h and saves an
// allocation per line. Use strings.Clone to keep it. Fill leaves h's
// Class and Counted to the caller, which classifies with a cache of its
// own (Classifier, Counts).
func (n *Normalizer) Fill(h *hit.Hit, e *logformat.Entry, site string) (drop string) {
	if len(e.Method) == 0 || len(e.Target) == 0 {
		return DropNoRequest
	}
	method, ok := n.method(e.Method)
	if !ok {
		return DropMethod
	}
	if !n.status(e.Status) {
		return DropStatus
	}
	// Pages up to this size are built without allocating (99% of real
	// ones are under 170 bytes); zeroing a larger buffer costs every line.
	var stack [256]byte
	page, pathEnd, ok := n.appendPage(stack[:0], e.Target)
	if !ok {
		return DropNotAPath
	}
	if n.static(page[:pathEnd]) {
		return DropStatic
	}
	*h = hit.Hit{
		Time:    e.Time,
		Site:    site,
		Path:    string(page),
		Method:  method,
		Status:  uint16(e.Status),
		Referer: alias(capReferer(e.Referer)),
	}
	if e.Bytes > 0 {
		h.Bytes = uint64(e.Bytes)
	}
	return ""
}

// maxRefererBytes caps a hit's referrer: a client writes it, and what
// it is for (where a page's visitors come from: its host and path) fits
// in the bytes a path is capped at; 64 KB a hit was the client's to
// make ClickHouse store.
const maxRefererBytes = 1024

// capReferer is the referrer cut to maxRefererBytes, at a character's
// start.
func capReferer(b []byte) []byte {
	if len(b) <= maxRefererBytes {
		return b
	}
	n := maxRefererBytes
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

func alias(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Path returns the page of a request target, or false when the target is
// no path. Rules naming pages can be put through it to match what Fill
// records.
func (n *Normalizer) Path(target string) (string, bool) {
	var stack [256]byte
	page, _, ok := n.appendPage(stack[:0], []byte(target))
	return string(page), ok
}

// AppendPath appends the page of target to dst, for callers that reuse
// a buffer.
func (n *Normalizer) AppendPath(dst, target []byte) ([]byte, bool) {
	page, _, ok := n.appendPage(dst, target)
	return page, ok
}

// method returns the method as a string without allocating for the
// configured ones and the common ones.
func (n *Normalizer) method(m []byte) (string, bool) {
	if len(n.methods) > 0 {
		for _, s := range n.methods {
			if string(m) == s {
				return s, true
			}
		}
		return "", false
	}
	switch string(m) {
	case "GET":
		return "GET", true
	case "HEAD":
		return "HEAD", true
	case "POST":
		return "POST", true
	}
	return string(m), true
}

func (n *Normalizer) status(s int) bool {
	if n.anyStatus {
		return true
	}
	return s >= 0 && s < 1024 && n.statuses[s/64]&(1<<(s%64)) != 0
}

// static reports whether the last segment of path has a static extension.
func (n *Normalizer) static(path []byte) bool {
	if len(n.exts) == 0 {
		return false
	}
	seg := path
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			seg = path[i+1:]
			break
		}
	}
	dot := -1
	for i := len(seg) - 1; i >= 0; i-- {
		if seg[i] == '.' {
			dot = i
			break
		}
	}
	if dot < 0 || len(seg)-dot-1 > maxExtBytes {
		return false
	}
	var buf [maxExtBytes]byte
	ext := foldASCII(append(buf[:0], seg[dot+1:]...))
	_, ok := n.exts[string(ext)]
	return ok
}
