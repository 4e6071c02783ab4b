// Package promql is what the dashboard and alerting-rule tests need of
// PromQL: the metric names an expression selects, to hold them to the
// metrics the daemons serve, and promtool, which checks the syntax.
package promql

import (
	"regexp"
	"strings"
)

var (
	strs     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	braces   = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	grouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	ident    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	keywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "atan2": true}
)

// MetricNames returns the metric names an expression selects: identifiers
// outside strings, matchers, ranges and label lists that no "(" follows
// (those are functions and aggregations).
func MetricNames(expr string) []string {
	s := strs.ReplaceAllString(expr, " ")
	s = braces.ReplaceAllString(s, " ")
	s = grouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range ident.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(s[loc[0]-1:loc[0]], "0123456789.$") {
			continue // a number's exponent or a duration's unit
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") || keywords[strings.ToLower(name)] {
			continue
		}
		out = append(out, name)
	}
	return out
}
