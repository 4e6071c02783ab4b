package rules

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
)

// A rule's subject and body templates are run by the worker on every
// crossing, and by the console on whatever a viewer pastes into Try a
// rule. text/template has no limit of its own: {{range 100000000000000}}
// runs for days, {{printf "%0999999999d" 1}} asks for a gigabyte, a
// template calling itself doubles its work at each call. So a template
// may use the language's plain parts only, each of bounded cost, and
// its output is capped:
//   - range over .Pages or .Labels (the data's own lists), not nested;
//   - no define, block or template (no template calls another);
//   - no assignment to a variable ({{$x = ...}}), which a loop could
//     double;
//   - the builtin functions but call, and printf's widths and
//     precisions at most 3 digits, not from an argument (*).
const maxTemplateOutput = 64 << 10

// errTemplateOutput: a template wrote more than maxTemplateOutput.
var errTemplateOutput = fmt.Errorf("writes more than %d KB", maxTemplateOutput>>10)

// templateFuncs are the builtins a template may call.
var templateFuncs = map[string]bool{
	"and": true, "or": true, "not": true, "len": true, "index": true, "slice": true,
	"print": true, "printf": true, "println": true, "html": true, "js": true, "urlquery": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
}

// rangeable are the fields a template may range over.
var rangeable = map[string]bool{"Pages": true, "Labels": true}

// bigWidth finds a printf verb's width or precision of 4 digits or more,
// or one taken from an argument.
var bigWidth = regexp.MustCompile(`%[-+# 0]*(?:\[\d+\])?(?:\*|\d{4,}|\d*\.(?:\[\d+\])?(?:\*|\d{4,}))`)

// checkTemplate refuses what could make a template's cost unbounded.
func checkTemplate(t *template.Template) error {
	if len(t.Templates()) > 1 {
		return errors.New("define and block are not allowed: one template, calling no other")
	}
	if t.Tree == nil {
		return nil
	}
	return checkNode(t.Root, false)
}

func checkNode(n parse.Node, inRange bool) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkNode(c, inRange); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return checkPipe(n.Pipe)
	case *parse.IfNode:
		return checkBranch(&n.BranchNode, inRange)
	case *parse.WithNode:
		return checkBranch(&n.BranchNode, inRange)
	case *parse.RangeNode:
		if inRange {
			return errors.New("range inside range is not allowed")
		}
		if !rangesOverData(n.Pipe) {
			return errors.New("range: only over .Pages or .Labels")
		}
		if err := checkPipe(n.Pipe); err != nil {
			return err
		}
		if err := checkNode(n.List, true); err != nil {
			return err
		}
		return checkNode(n.ElseList, inRange)
	case *parse.TemplateNode:
		return fmt.Errorf("template %q: one template may not call another", n.Name)
	}
	return nil
}

func checkBranch(b *parse.BranchNode, inRange bool) error {
	if err := checkPipe(b.Pipe); err != nil {
		return err
	}
	if err := checkNode(b.List, inRange); err != nil {
		return err
	}
	return checkNode(b.ElseList, inRange)
}

func checkPipe(p *parse.PipeNode) error {
	if p == nil {
		return nil
	}
	if p.IsAssign {
		return errors.New("assigning to a variable ({{$x = ...}}) is not allowed; declare one with :=")
	}
	for _, c := range p.Cmds {
		for i, a := range c.Args {
			switch a := a.(type) {
			case *parse.IdentifierNode:
				if !templateFuncs[a.Ident] {
					return fmt.Errorf("function %q is not allowed", a.Ident)
				}
				if a.Ident == "printf" && i == 0 {
					if err := checkFormat(c.Args[1:]); err != nil {
						return err
					}
				}
			case *parse.PipeNode:
				if err := checkPipe(a); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkFormat: printf's format is quoted text, its widths small.
func checkFormat(args []parse.Node) error {
	if len(args) == 0 {
		return nil
	}
	f, ok := args[0].(*parse.StringNode)
	if !ok {
		return errors.New("printf: its format must be quoted text")
	}
	if m := bigWidth.FindString(strings.ReplaceAll(f.Text, "%%", "")); m != "" {
		return fmt.Errorf("printf: width or precision %s: at most 3 digits, not from an argument", strconv.Quote(m))
	}
	return nil
}

// rangesOverData: the pipeline is one field of the data's lists, from
// dot or from $ (.Pages, $.Labels).
func rangesOverData(p *parse.PipeNode) bool {
	if len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	switch a := p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode:
		return len(a.Ident) == 1 && rangeable[a.Ident[0]]
	case *parse.VariableNode:
		return len(a.Ident) == 2 && a.Ident[0] == "$" && rangeable[a.Ident[1]]
	}
	return false
}

// cappedWriter keeps what a template writes, up to max bytes.
type cappedWriter struct {
	buf []byte
	max int
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if len(w.buf)+len(p) > w.max {
		return 0, errTemplateOutput
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// runTemplate executes t on d, its output capped.
func runTemplate(t *template.Template, d TemplateData) (string, error) {
	w := &cappedWriter{max: maxTemplateOutput}
	if err := t.Execute(w, d); err != nil {
		if errors.Is(err, errTemplateOutput) {
			return "", errTemplateOutput
		}
		return "", err
	}
	return string(w.buf), nil
}
