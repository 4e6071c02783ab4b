package rules

import (
	"errors"
	"fmt"
	"math/bits"
	"regexp"
	"strings"
)

// matcher is a compiled Match. Exact and prefix compare strings directly and
// globs run over the path in place, so none of them allocates.
type matcher struct {
	kind  matchKind
	s     string // exact or prefix
	glob  []globSeg
	regex *regexp.Regexp
}

type matchKind uint8

const (
	matchNone matchKind = iota // not compiled: Validate was not called
	matchExact
	matchPrefix
	matchGlob
	matchRegex
)

type segKind uint8

const (
	segLiteral    segKind = iota
	segAny                // "*": one non-empty segment
	segWildcard           // "*" inside a segment, e.g. "*.html"
	segDoubleStar         // "**": any number of segments
)

type globSeg struct {
	kind segKind
	lit  string   // segLiteral
	part []string // segWildcard: the literal pieces between the stars
}

// Matches reports whether the rule watches this page (a rule without a
// site watches every site's). It panics on a rule
// that was not validated: silently matching nothing would hide the bug.
func (r *Rule) Matches(site, path string) bool {
	if r.Site != "" && site != r.Site {
		return false
	}
	return r.matcher.match(path)
}

func (m *matcher) match(path string) bool {
	switch m.kind {
	case matchExact:
		return path == m.s
	case matchPrefix:
		return strings.HasPrefix(path, m.s)
	case matchGlob:
		return matchGlobSegs(m.glob, path)
	case matchRegex:
		return m.regex.MatchString(path)
	}
	panic("rules: Matches called on a rule that was not validated")
}

// compileMatch checks m and compiles it. Errors name the field, relative
// to the match key.
func compileMatch(m Match) (matcher, error) {
	set := 0
	for _, s := range []string{m.Exact, m.Prefix, m.Glob, m.Regex} {
		if s != "" {
			set++
		}
	}
	if set != 1 {
		return matcher{}, errors.New(": exactly one of exact, prefix, glob, regex must be set")
	}
	switch {
	case m.Exact != "":
		if err := countedSpelling(m.Exact); err != nil {
			return matcher{}, fmt.Errorf(".exact: %w", err)
		}
		return matcher{kind: matchExact, s: m.Exact}, nil
	case m.Prefix != "":
		if err := countedSpelling(m.Prefix); err != nil {
			return matcher{}, fmt.Errorf(".prefix: %w", err)
		}
		return matcher{kind: matchPrefix, s: m.Prefix}, nil
	case m.Glob != "":
		segs, err := compileGlob(m.Glob)
		if err != nil {
			return matcher{}, fmt.Errorf(".glob: %w", err)
		}
		return matcher{kind: matchGlob, glob: segs}, nil
	}
	if len(m.Regex) > MaxRegexLen {
		return matcher{}, fmt.Errorf(".regex: longer than %d bytes (%d)", MaxRegexLen, len(m.Regex))
	}
	// Anchored so "/blog/\d+" means that page, not any path containing it.
	re, err := regexp.Compile(`^(?:` + m.Regex + `)$`)
	if err != nil {
		return matcher{}, fmt.Errorf(".regex: %w", err)
	}
	return matcher{kind: matchRegex, regex: re}, nil
}

// countedSpelling checks that a path compared as written can be one a
// page is counted under: pages start with /, have runs of slashes
// merged and no servlet session id (pipeline/pageview), so a rule on
// /a//b or /cart;jsessionid=x would never fire.
func countedSpelling(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("must start with /, got %q", p)
	case strings.Contains(p, "//"):
		return fmt.Errorf("pages are counted with runs of slashes made one, so %q matches none: write it with single slashes", p)
	case strings.Contains(strings.ToLower(p), ";jsessionid="):
		return fmt.Errorf("pages are counted without their ;jsessionid=, so %q matches none: leave it out", p)
	}
	return nil
}

func compileGlob(g string) ([]globSeg, error) {
	if !strings.HasPrefix(g, "/") {
		return nil, fmt.Errorf("must start with /, got %q", g)
	}
	parts := strings.Split(g[1:], "/")
	if len(parts) > MaxGlobSegments {
		return nil, fmt.Errorf("more than %d segments (%d)", MaxGlobSegments, len(parts))
	}
	segs := make([]globSeg, len(parts))
	for i, p := range parts {
		switch {
		case p == "**":
			segs[i] = globSeg{kind: segDoubleStar}
		case strings.Contains(p, "**"):
			return nil, fmt.Errorf(`"**" must be a whole segment, got %q in %q`, p, g)
		case p == "*":
			segs[i] = globSeg{kind: segAny}
		case strings.Contains(p, "*"):
			segs[i] = globSeg{kind: segWildcard, part: strings.Split(p, "*")}
		default:
			segs[i] = globSeg{kind: segLiteral, lit: p}
		}
	}
	return segs, nil
}

// matchGlobSegs runs the glob as a set of positions in the pattern (bit i:
// "segment i is next"), advanced once per path segment. That is linear in
// path × pattern whatever the "**"s, where backtracking could be
// exponential on a hostile path like "/a/a/a/.../a".
func matchGlobSegs(segs []globSeg, path string) bool {
	if len(path) == 0 || path[0] != '/' {
		return false
	}
	n := len(segs)
	done := uint64(1) << n
	state := closeStars(segs, 1)
	rest := path[1:]
	for {
		seg, more := rest, false
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, rest, more = rest[:i], rest[i+1:], true
		}
		var next uint64
		for s := state &^ done; s != 0; s &= s - 1 {
			i := bits.TrailingZeros64(s)
			switch g := &segs[i]; g.kind {
			case segDoubleStar:
				next |= 1 << i
			case segAny:
				if seg != "" {
					next |= 1 << (i + 1)
				}
			case segLiteral:
				if seg == g.lit {
					next |= 1 << (i + 1)
				}
			case segWildcard:
				if wildcard(g.part, seg) {
					next |= 1 << (i + 1)
				}
			}
		}
		state = closeStars(segs, next)
		if state == 0 {
			return false
		}
		if !more {
			return state&done != 0
		}
	}
}

// closeStars adds, for every position at a "**", the position after it:
// "**" may stand for no segment at all.
func closeStars(segs []globSeg, state uint64) uint64 {
	for i := range segs {
		if state&(1<<i) != 0 && segs[i].kind == segDoubleStar {
			state |= 1 << (i + 1)
		}
	}
	return state
}

// wildcard matches one segment against literal pieces separated by stars.
// Taking each middle piece at its leftmost place is enough when the only
// metacharacter is "*".
func wildcard(part []string, s string) bool {
	first, last := part[0], part[len(part)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, p := range part[1 : len(part)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}
