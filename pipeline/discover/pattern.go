package discover

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

type segKind uint8

const (
	segLiteral segKind = iota
	segGlob            // path.Match within one segment
	segAny             // "**": any number of directories, none included
)

type segment struct {
	kind segKind
	text string
}

func (s segment) match(name string) bool {
	switch s.kind {
	case segLiteral:
		return s.text == name
	case segGlob:
		ok, _ := path.Match(s.text, name) // validated when compiled
		return ok
	}
	return true
}

// include is a compiled glob: a literal root directory, where scanning
// starts and which is watched first, and the segments below it.
type include struct {
	text string
	root string
	segs []segment // never empty, never ends in segAny
}

// exclude is a compiled exclude pattern.
type exclude struct {
	base  string    // base-name pattern, when the pattern has no "/"
	segs  []segment // whole-path pattern otherwise
	prune []segment // for "DIR/**": DIR, whose whole subtree is skipped
	// For a base pattern "*" + tail, tail without "*": it matches the
	// last tailLen characters, so path.Match need not try every start.
	// Every file scanned meets every exclude; this makes that cheap.
	tail    string
	tailLen int
}

func compileInclude(p string) (include, error) {
	if p == "" {
		return include{}, errors.New("must be set")
	}
	if !strings.HasPrefix(p, "/") {
		return include{}, fmt.Errorf("must be an absolute path, got %q", p)
	}
	// Rejected rather than cleaned: "/a/**/../b" cleans to "/a/b", which is
	// not what it says, and a found path must match its glob as a string.
	if c := filepath.Clean(p); c != p || p == "/" {
		return include{}, fmt.Errorf("must be a clean path naming files (like %q), got %q", c, p)
	}
	parts := strings.Split(p[1:], "/")
	segs, err := compileSegments(parts)
	if err != nil {
		return include{}, err
	}
	// The root is the literal directory prefix; the last segment always
	// stays below it, so a plain file path has its directory as root.
	n := 0
	for n < len(segs)-1 && segs[n].kind == segLiteral {
		n++
	}
	in := include{text: p, root: "/" + strings.Join(parts[:n], "/"), segs: segs[n:]}
	if in.segs[len(in.segs)-1].kind == segAny {
		// "/var/log/**" means every file below /var/log.
		in.segs = append(in.segs, segment{kind: segGlob, text: "*"})
	}
	return in, nil
}

func compileExclude(p string) (exclude, error) {
	if p == "" {
		return exclude{}, errors.New("must not be empty")
	}
	if !strings.Contains(p, "/") {
		if p == "**" {
			return exclude{}, errors.New(`"**" alone excludes everything; a base-name pattern is "*.ext"`)
		}
		if _, err := compileSegments([]string{p}); err != nil {
			return exclude{}, err
		}
		ex := exclude{base: p}
		if tail, ok := strings.CutPrefix(p, "*"); ok && !strings.Contains(tail, "*") {
			ex.tail, ex.tailLen = tail, patternLen(tail)
		}
		return ex, nil
	}
	var parts []string
	switch {
	case strings.HasSuffix(p, "/"):
		return exclude{}, fmt.Errorf("must not end in /, got %q (use DIR/** for a directory)", p)
	case strings.HasPrefix(p, "/"):
		parts = strings.Split(p[1:], "/")
	case strings.HasPrefix(p, "**/"):
		parts = strings.Split(p, "/")
	default:
		return exclude{}, fmt.Errorf("with a /, must be absolute or start with **/, got %q", p)
	}
	segs, err := compileSegments(parts)
	if err != nil {
		return exclude{}, err
	}
	ex := exclude{segs: segs}
	if n := len(segs); n > 1 && segs[n-1].kind == segAny {
		ex.prune = segs[:n-1]
	}
	return ex, nil
}

func compileSegments(parts []string) ([]segment, error) {
	segs := make([]segment, 0, len(parts))
	for _, part := range parts {
		switch {
		case part == "" || part == "." || part == "..":
			return nil, fmt.Errorf("empty, . or .. path segment in %q", strings.Join(parts, "/"))
		case part == "**":
			if len(segs) > 0 && segs[len(segs)-1].kind == segAny {
				continue // "**/**" is "**"
			}
			segs = append(segs, segment{kind: segAny})
		case strings.Contains(part, "**"):
			return nil, fmt.Errorf(`"**" must be a whole path segment, got %q`, part)
		case strings.ContainsAny(part, `*?[\`):
			if _, err := path.Match(part, ""); err != nil {
				return nil, fmt.Errorf("bad pattern %q: %w", part, err)
			}
			segs = append(segs, segment{kind: segGlob, text: part})
		default:
			segs = append(segs, segment{kind: segLiteral, text: part})
		}
	}
	return segs, nil
}

// matchSegments reports whether names, the segments of a path, match segs.
func matchSegments(segs []segment, names []string) bool {
	for len(segs) > 0 {
		if segs[0].kind == segAny {
			rest := segs[1:]
			if len(rest) == 0 {
				return true
			}
			for i := 0; i <= len(names); i++ {
				if matchSegments(rest, names[i:]) {
					return true
				}
			}
			return false
		}
		if len(names) == 0 || !segs[0].match(names[0]) {
			return false
		}
		segs, names = segs[1:], names[1:]
	}
	return len(names) == 0
}

func splitPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// matches reports whether the absolute, clean path p matches the glob.
func (in *include) matches(p string) bool {
	var rel string
	switch {
	case in.root == "/":
		rel = strings.TrimPrefix(p, "/")
	case strings.HasPrefix(p, in.root+"/"):
		rel = p[len(in.root)+1:]
	default:
		return false
	}
	return rel != "" && matchSegments(in.segs, strings.Split(rel, "/"))
}

// patternLen returns how many characters a pattern without "*" matches.
func patternLen(p string) int {
	n := 0
	for i := 0; i < len(p); n++ {
		switch p[i] {
		case '\\':
			i += 2
		case '[':
			// One character, whatever the class holds; it ends at the
			// first "]" not escaped (valid patterns only reach here).
			j := i + 1
			for j < len(p) && p[j] != ']' {
				if p[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
		default:
			_, size := utf8.DecodeRuneInString(p[i:])
			i += size
		}
	}
	return n
}

// excludesFile reports whether the file at p is excluded.
func (ex *exclude) excludesFile(p string) bool {
	if ex.tail != "" {
		name := filepath.Base(p)
		i := len(name)
		for range ex.tailLen {
			if i == 0 {
				return false
			}
			_, size := utf8.DecodeLastRuneInString(name[:i])
			i -= size
		}
		ok, _ := path.Match(ex.tail, name[i:])
		return ok
	}
	if ex.base != "" {
		ok, _ := path.Match(ex.base, filepath.Base(p))
		return ok
	}
	return matchSegments(ex.segs, splitPath(p))
}

// prunesDir reports whether the directory at p holds only excluded files.
func (ex *exclude) prunesDir(p string) bool {
	return ex.prune != nil && matchSegments(ex.prune, splitPath(p))
}
