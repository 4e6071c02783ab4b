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
	// ** any run including /, ? one character but /.
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
// but /, ** any run including /, ? one character but /. Everything else
// is literal.
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch {
		case strings.HasPrefix(pattern, "**"):
			rest := strings.TrimLeft(pattern, "*")
			for i := 0; i <= len(s); i++ {
				if globMatch(rest, s[i:]) {
					return true
				}
			}
			return false
		case pattern[0] == '*':
			rest := pattern[1:]
			for i := 0; i <= len(s); i++ {
				if globMatch(rest, s[i:]) {
					return true
				}
				if i < len(s) && s[i] == '/' {
					return false
				}
			}
			return false
		case pattern[0] == '?':
			if len(s) == 0 || s[0] == '/' {
				return false
			}
			pattern, s = pattern[1:], s[1:]
		default:
			if len(s) == 0 || s[0] != pattern[0] {
				return false
			}
			pattern, s = pattern[1:], s[1:]
		}
	}
	return len(s) == 0
}
