package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/config/strict"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// A rules file holds a `rules:` list, each item written as under
// sweeper.rules:
//
//	rules:
//	  - name: pricing-hourly
//	    site: example.com
//	    path: /pricing
//	    threshold: 1000
//	    window: 1h
//	    notify: {recipients: [ops@example.com]}
type rulesFile struct {
	Rules []rules.Rule `yaml:"rules"`
}

// LoadRules returns the inline rules and those under cfg.RulesPath as one
// validated, compiled set. Every problem is reported, a file's by file
// and line ("rules.d/blog.yaml:12: rules[3].match.glob: ..."), and names
// must be unique across all of them.
func LoadRules(cfg Config) ([]rules.Rule, error) {
	all := slices.Clone(cfg.Rules)
	var errs []error
	if err := rules.ValidateAll("sweeper.rules", all); err != nil {
		errs = append(errs, err)
	}
	where := make([]string, len(all))
	for i := range all {
		where[i] = fmt.Sprintf("sweeper.rules[%d]", i)
	}
	files, err := RuleFiles(cfg.RulesPath)
	if err != nil {
		errs = append(errs, err)
	}
	for _, f := range files {
		rs, lines, err := readRulesFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range rs {
			if err := rs[i].Validate(fmt.Sprintf("rules[%d]", i)); err != nil {
				// One line per problem, each with its file and line.
				for _, e := range unjoin(err) {
					errs = append(errs, fmt.Errorf("%s:%d: %w", f, lines[i], e))
				}
			}
			where = append(where, fmt.Sprintf("%s:%d", f, lines[i]))
		}
		all = append(all, rs...)
	}
	seen := map[string]int{}
	for i, r := range all {
		if j, dup := seen[r.Name]; dup && r.Name != "" {
			errs = append(errs, fmt.Errorf("%s: rule name %q is already used at %s", where[i], r.Name, where[j]))
		} else {
			seen[r.Name] = i
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return all, nil
}

// RuleFiles lists the files under a rules path: the file itself, or a
// directory's *.yaml and *.yml files in name order. Empty path: none.
func RuleFiles(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sweeper.rules_path: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("sweeper.rules_path: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") {
			continue // editors' swap and backup files start with a dot
		}
		if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" {
			out = append(out, filepath.Join(path, name))
		}
	}
	return out, nil
}

// readRulesFile decodes one file strictly and returns each rule's line.
func readRulesFile(path string) ([]rules.Rule, []int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var f rulesFile
	if err := strict.Decode(&doc, &f, ""); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	lines := make([]int, len(f.Rules))
	if len(doc.Content) > 0 {
		top := doc.Content[0]
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i].Value == "rules" {
				for j, item := range top.Content[i+1].Content {
					if j < len(lines) {
						lines[j] = item.Line
					}
				}
			}
		}
	}
	return f.Rules, lines, nil
}

// unjoin splits an errors.Join into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
