package crossing

import (
	"fmt"
	"strings"
)

// Match selects crossings. Every field set must hold; an empty Match
// matches everything. It is shared by the worker's routes and silences.
type Match struct {
	Site string `yaml:"site" json:"site,omitempty"` // exact
	Rule string `yaml:"rule" json:"rule,omitempty"` // exact
	// Page is a glob over the path: * is any run of characters but /,
	// ** any run including /, ? one character but /, and \ makes the
	// character after it literal (\* a star).
	Page   string            `yaml:"page" json:"page,omitempty"`
	Labels map[string]string `yaml:"labels" json:"labels,omitempty"` // each label equal
}

// Matches reports whether m selects x.
func (m Match) Matches(x Crossing) bool {
	if m.Site != "" && m.Site != x.Site {
		return false
	}
	if m.Rule != "" && m.Rule != x.Rule {
		return false
	}
	if m.Page != "" && !globMatch(m.Page, x.Path) {
		return false
	}
	for k, v := range m.Labels {
		if got, ok := x.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Validate checks a matcher; key names it in errors.
func (m Match) Validate(key string) error {
	if m.Page != "" && !strings.HasPrefix(m.Page, "/") && !strings.HasPrefix(m.Page, "*") {
		return fmt.Errorf("%s.page: a glob over the path, starting with / or *, got %q", key, m.Page)
	}
	if len(m.Page) > 1024 {
		return fmt.Errorf("%s.page: longer than 1024 bytes", key)
	}
	return nil
}

// globMatch matches a path against a glob: * is any run of characters
// but /, ** any run including /, ? one character but /, \ the character
// after it (a path's own * and ? can be named: a snooze of the page
// "/*******" silenced every page of 7 characters). Everything else is
// literal, a \ at the end too. It walks the path once, keeping the set
// of places in the pattern it could be at (an NFA): time len(pattern) ×
// len(path) at worst, where trying each split of the path at each star
// took time exponential in the stars (74 s for 8 ** on a path of 60
// bytes), and the paths are whatever web clients sent.
func globMatch(pattern, s string) bool {
	toks := globTokens(pattern)
	cur, next := make([]bool, len(toks)+1), make([]bool, len(toks)+1)
	cur[0] = true
	closeStars(toks, cur)
	for i := 0; i < len(s); i++ {
		c := s[i]
		clear(next)
		alive := false
		for j, t := range toks {
			if !cur[j] {
				continue
			}
			switch {
			case t == tokDoubleStar || t == tokStar && c != '/':
				next[j] = true // the star takes c and stays
			case t == tokOne && c != '/' || t < 256 && byte(t) == c:
				next[j+1] = true
			default:
				continue
			}
			alive = true
		}
		if !alive {
			return false
		}
		closeStars(toks, next)
		cur, next = next, cur
	}
	return cur[len(toks)]
}

// A glob's tokens: a byte (0–255) to match itself, or one of these.
const (
	tokOne        = 256 + iota // ?
	tokStar                    // *
	tokDoubleStar              // ** (or more stars)
)

func globTokens(pattern string) []int {
	toks := make([]int, 0, len(pattern))
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			if i+1 < len(pattern) {
				i++
			}
			toks = append(toks, int(pattern[i]))
		case '?':
			toks = append(toks, tokOne)
		case '*':
			n := 1
			for i+1 < len(pattern) && pattern[i+1] == '*' {
				i, n = i+1, n+1
			}
			if n == 1 {
				toks = append(toks, tokStar)
			} else {
				toks = append(toks, tokDoubleStar)
			}
		default:
			toks = append(toks, int(pattern[i]))
		}
	}
	return toks
}

// closeStars adds, for each place at a star, the place after it: a
// star may match nothing. Places only move forward, so one pass does.
func closeStars(toks []int, at []bool) {
	for j, t := range toks {
		if at[j] && (t == tokStar || t == tokDoubleStar) {
			at[j+1] = true
		}
	}
}
