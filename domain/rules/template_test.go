package rules

import (
	"strings"
	"testing"
)

func templateRule(t *testing.T, subject, body string) (*Rule, error) {
	t.Helper()
	r := &Rule{Name: "pricing", Site: "example.com", Path: "/pricing", Thresholds: Thresholds{100}, Window: ParseWindow("1h"),
		Notify: Notify{Recipients: []string{"a@example.com"}, Labels: map[string]string{"team": "web"}, Subject: subject, Body: body}}
	return r, r.Validate("rules[0]")
}

// The templates people write pass: fields, labels, conditions, a range
// over the pages of a sum rule or the labels, printf with a small width.
func TestTemplatesInPlainUsePass(t *testing.T) {
	for _, text := range []string{
		"{{.Path}} passed {{.Threshold}} ({{.Count}} in {{.Window}})",
		"[{{.Labels.team}}] {{.Rule}}",
		"{{if gt .Count 1000}}big{{else}}small{{end}} {{with .WindowKey}}{{.}}{{end}}",
		"{{range .Pages}}{{.Path}}: {{printf \"%8d\" .Count}}\n{{end}}",
		"{{range $k, $v := $.Labels}}{{$k}}={{$v}} {{end}}{{$n := len .Pages}}{{$n}} pages",
		"{{printf \"%.1f%%\" 12.5}} {{.CrossedAt.Format \"15:04\"}} {{slice .Path 1}}",
		"{{$p := .Path}}{{$big := gt .Count 1000}}{{if $big}}{{print $p \" \" $p}}{{end}}",
		"{{printf \"%%1000 of %d\" .Count}}",
	} {
		if _, err := templateRule(t, text, text); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
}

// A template whose cost has no bound is refused when the rule is
// validated, with the key and the reason, before it is ever run: the
// console's Try a rule validates what a viewer pastes.
func TestTemplatesOfUnboundedCostAreRefused(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"{{range 100000000000000}}{{end}}", "range: only over .Pages or .Labels"},
		{"{{range .Count}}x{{end}}", "range: only over .Pages or .Labels"},
		{"{{with .Pages}}{{range .}}x{{end}}{{end}}", "range: only over .Pages or .Labels"},
		{"{{range .Pages}}{{range $.Pages}}x{{end}}{{end}}", "range inside range"},
		{"{{range .Pages}}{{if true}}{{range $.Labels}}x{{end}}{{end}}{{end}}", "range inside range"},
		{`{{printf "%0999999999d" 1}}`, `width or precision "%0999999999"`},
		{`{{printf "%.99999f" 1.0}}`, "width or precision"},
		{`{{printf "%*d" 100000000 1}}`, "not from an argument"},
		{`{{printf "%[1]*d" 100000000}}`, "not from an argument"},
		{`{{printf .Path}}`, "format must be quoted text"},
		{`{{define "a"}}{{template "a"}}{{end}}{{template "a"}}`, "define and block are not allowed"},
		{`{{template "x"}}`, "may not call another"},
		{`{{$s := "x"}}{{range .Pages}}{{$s = print $s $s}}{{end}}`, "assigning to a variable"},
		{`{{call .Path}}`, `function "call" is not allowed`},
		{`{{len (printf "%*s" 1000000000 "")}}`, "not from an argument"},
		{`{{(printf "%*d" 1000000 1).X}}`, "not from an argument"},
		{`{{(call .Path).X}}`, `function "call" is not allowed`},
		// Growth by feeding a function its own result: a reviewer's 309
		// bytes allocated 589 MB at five levels of this, ten times each.
		{`{{$a := printf "%999d" 1}}{{$b := print $a $a $a $a $a $a $a $a $a $a}}`, "may not hold print's"},
		{`{{with $a := print .Path .Path}}{{.}}{{end}}`, "may not hold print's"},
		{`{{$a := len (print .Path .Path)}}`, "may not hold print's"},
		{`{{js (js (js (js .Path)))}}`, `function "js" is not allowed`},
		{`{{.Path | html | html}}`, `function "html" is not allowed`},
	} {
		_, err := templateRule(t, c.text, "")
		if err == nil || !strings.Contains(err.Error(), "rules[0].notify.subject") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want rules[0].notify.subject and %q", c.text, err, c.want)
		}
	}
}

// What a template writes is capped: a body over 64 KB (a page's path
// repeated over a long list of pages) is an error, not a message.
func TestTemplateOutputIsCapped(t *testing.T) {
	r, err := templateRule(t, "", "{{range .Pages}}{{.Path}}{{end}}")
	if err != nil {
		t.Fatal(err)
	}
	d := r.Sample()
	d.Pages = make([]PageCount, 100)
	for i := range d.Pages {
		d.Pages[i] = PageCount{Path: "/" + strings.Repeat("a", 1023), Count: 1}
	}
	if _, _, _, _, err := r.Render(d); err == nil || !strings.Contains(err.Error(), "writes more than 64 KB") {
		t.Fatalf("100 KB body: %v, want it refused", err)
	}
	d.Pages = d.Pages[:10]
	if _, body, _, ok, err := r.Render(d); err != nil || !ok || len(body) != 10*1024 {
		t.Fatalf("10 KB body: %d bytes, %v", len(body), err)
	}
}
