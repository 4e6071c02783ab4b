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
// runs for days, a template calling itself doubles its work at each
// call, and values fed back into functions grow without end ({{$b :=
// print $a $a}} ten times over, or js of js of js). So a template may
// use the language's plain parts only, none of which makes a value
// larger than the template's own text and the data's, and its output is
// capped:
//   - range over .Pages or .Labels (the data's own lists), not nested;
//   - no define, block or template (no template calls another);
//   - a variable holds data, a length or a comparison, never print's,
//     printf's or println's result, and is never assigned again;
//   - the builtin functions but call, html, js and urlquery (the mailer
//     escapes what a body says), and printf's widths and precisions at
//     most 3 digits, not from an argument (*).
const maxTemplateOutput = 64 << 10

// errTemplateOutput: a template wrote more than maxTemplateOutput.
var errTemplateOutput = fmt.Errorf("writes more than %d KB", maxTemplateOutput>>10)

// templateFuncs are the builtins a template may call.
var templateFuncs = map[string]bool{
	"and": true, "or": true, "not": true, "len": true, "index": true, "slice": true,
	"print": true, "printf": true, "println": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
}

// joiners are the functions whose result is as long as their arguments
// together: one kept in a variable and joined to itself again grows.
var joiners = map[string]bool{"print": true, "printf": true, "println": true}

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
	if len(p.Decl) > 0 && joins(p) {
		return errors.New("a variable may not hold print's, printf's or println's result: write it where it is used")
	}
	for _, c := range p.Cmds {
		if err := checkArgs(c.Args); err != nil {
			return err
		}
	}
	return nil
}

func checkArgs(args []parse.Node) error {
	for i, a := range args {
		switch a := a.(type) {
		case *parse.IdentifierNode:
			if !templateFuncs[a.Ident] {
				return fmt.Errorf("function %q is not allowed", a.Ident)
			}
			if a.Ident == "printf" && i == 0 {
				if err := checkFormat(args[1:]); err != nil {
					return err
				}
			}
		case *parse.PipeNode:
			if err := checkPipe(a); err != nil {
				return err
			}
		case *parse.ChainNode: // (pipeline).Field
			if err := checkArgs([]parse.Node{a.Node}); err != nil {
				return err
			}
		}
	}
	return nil
}

// joins reports whether a pipeline calls print, printf or println,
// nested pipelines included.
func joins(p *parse.PipeNode) bool {
	var in func(n parse.Node) bool
	in = func(n parse.Node) bool {
		switch n := n.(type) {
		case *parse.IdentifierNode:
			return joiners[n.Ident]
		case *parse.PipeNode:
			for _, c := range n.Cmds {
				for _, a := range c.Args {
					if in(a) {
						return true
					}
				}
			}
		case *parse.ChainNode:
			return in(n.Node)
		}
		return false
	}
	return in(p)
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
