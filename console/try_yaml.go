package console

import (
	"errors"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/config/strict"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// parseTryRules decodes one rule (a mapping) or a list of them as
// sweeper.rules items, strictly, and validates them as LoadRules does.
// Every problem is named by its key, as in the config file, with its
// line in the text.
func parseTryRules(text string) ([]rules.Rule, []tryError) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, []tryError{{Key: "sweeper.rules", Message: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	if len(doc.Content) == 0 {
		return nil, []tryError{{Key: "sweeper.rules", Message: "no rule given: paste one rule (a mapping) or a list of them"}}
	}
	root := doc.Content[0]
	if root.Kind == yaml.MappingNode {
		root = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: root.Line, Content: []*yaml.Node{root}}
	}
	if root.Kind == yaml.SequenceNode && len(root.Content) > tryMaxRules {
		return nil, []tryError{{Key: "sweeper.rules", Message: "at most " + strconv.Itoa(tryMaxRules) + " rules at a time"}}
	}
	var rs []rules.Rule
	if err := strict.Decode(root, &rs, "sweeper.rules"); err != nil {
		return nil, errorsOf(err, root)
	}
	if len(rs) == 0 {
		return nil, []tryError{{Key: "sweeper.rules", Message: "no rule given: paste one rule (a mapping) or a list of them"}}
	}
	if err := rules.ValidateAll("sweeper.rules", rs); err != nil {
		return nil, errorsOf(err, root)
	}
	return rs, nil
}

// errorsOf splits a (joined) error into its problems, each with its key
// and its line: strict decoding writes "key (line N): ...", validation
// "key: ...", whose line is looked up.
func errorsOf(err error, root *yaml.Node) []tryError {
	var out []tryError
	for _, e := range flatten(err) {
		msg := e.Error()
		te := tryError{Key: "sweeper.rules", Message: msg}
		if i := strings.Index(msg, ": "); i > 0 && strings.HasPrefix(msg, "sweeper.rules") {
			te.Key, te.Message = msg[:i], msg[i+2:]
		}
		if i := strings.Index(te.Key, " (line "); i > 0 {
			te.Line, _ = strconv.Atoi(strings.TrimSuffix(te.Key[i+len(" (line "):], ")"))
			te.Key = te.Key[:i]
		} else {
			te.Line = lineOf(root, strings.TrimPrefix(te.Key, "sweeper.rules"))
		}
		out = append(out, te)
	}
	return out
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// lineOf is the line of the deepest node a key ("[0].spike.factor")
// reaches from n.
func lineOf(n *yaml.Node, key string) int {
	line := n.Line
	for key != "" && n != nil {
		var next *yaml.Node
		switch key[0] {
		case '[':
			end := strings.IndexByte(key, ']')
			if end < 0 {
				return line
			}
			i, err := strconv.Atoi(key[1:end])
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return line
			}
			next, key = n.Content[i], key[end+1:]
		case '.':
			key = key[1:]
			end := strings.IndexAny(key, ".[")
			if end < 0 {
				end = len(key)
			}
			name := key[:end]
			key = key[end:]
			if n.Kind != yaml.MappingNode {
				return line
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == name {
					line, next = n.Content[i].Line, n.Content[i+1]
				}
			}
			if next == nil {
				return line
			}
			n = next
			continue
		default:
			return line
		}
		n, line = next, next.Line
	}
	return line
}

// ruleYAML writes a loaded rule as the form takes it.
func ruleYAML(r rules.Rule) (string, error) {
	var n yaml.Node
	if err := n.Encode(r); err != nil {
		return "", err
	}
	prune(&n)
	b, err := yaml.Marshal(&n)
	if err != nil {
		return "", err
	}
	// It must read back as it was written, or the form would start with
	// an error.
	if _, errs := parseTryRules(string(b)); len(errs) > 0 {
		return "", errors.New(errs[0].Message)
	}
	return string(b), nil
}

// prune drops a mapping's keys whose values are empty or zero (a rule
// written back holds every field: "zone: \"\"", "cooldown: 0s"), which
// decode to what leaving them out does.
func prune(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		for _, c := range n.Content {
			prune(c)
		}
		return
	}
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		v := n.Content[i+1]
		prune(v)
		switch {
		case v.Kind == yaml.ScalarNode && (v.Value == "" || v.Value == "0" || v.Value == "0s"),
			v.Kind != yaml.ScalarNode && len(v.Content) == 0:
			continue
		}
		kept = append(kept, n.Content[i], v)
	}
	n.Content = kept
}
