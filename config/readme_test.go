package config_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// The README's example config is meant to be copied: it must load and
// validate exactly as the daemons do it (config.Load, then Validate for
// each part), and its rule must be one the sweeper can match.
func TestReadmeExampleConfig(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := fencedBlocks(readme, "yaml")
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d ```yaml blocks, want exactly 1 (the example config)", len(blocks))
	}
	example := blocks[0]

	// Its secrets are {env: NAME}: give each variable a value, as a
	// deployment would.
	for _, m := range regexp.MustCompile(`\{env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}`).FindAllStringSubmatch(example, -1) {
		t.Setenv(m[1], "secret-for-readme-test")
	}
	path := filepath.Join(t.TempDir(), "pagewatch.yaml")
	if err := os.WriteFile(path, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("README.md example config: %v", err)
	}
	for _, part := range []config.Part{config.IngestTail, config.IngestLoad, config.Sweeper, config.Worker} {
		if err := cfg.Validate(part); err != nil {
			t.Errorf("README.md example config, %s: %v", part, err)
		}
	}

	// What the example promises: an nginx combined log, SMTP, one rule.
	if n := len(cfg.Ingest.Tail.Inputs); n == 0 {
		t.Error("README.md example config: no ingest.tail.inputs")
	}
	if cfg.Mail.Transport != "smtp" {
		t.Errorf("README.md example config: mail.transport is %q, want smtp", cfg.Mail.Transport)
	}
	rs, err := sweep.LoadRules(cfg.Sweeper)
	if err != nil {
		t.Fatalf("README.md example rules: %v", err)
	}
	if len(rs) == 0 {
		t.Fatal("README.md example config: no sweeper.rules")
	}
	// The sweeper warns at start about a rule path that ingest records
	// differently (it would match nothing); the example must not.
	n, err := pageview.New(cfg.Ingest.Tail.Pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Match.Exact == "" {
			continue
		}
		if p, ok := n.Path(r.Match.Exact); !ok || p != r.Match.Exact {
			t.Errorf("README.md rule %s: path %q is recorded by ingest as %q", r.Name, r.Match.Exact, p)
		}
	}
}

// Every relative link in README.md and docs/*.md points to a file or
// directory that exists, and every #anchor to a heading of its page. Every
// docs page is linked from README.md and from the docs index.
func TestReadmeLinks(t *testing.T) {
	root := ".."
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md")
	}
	pages := append([]string{filepath.Join(root, "README.md")}, docs...)
	linked := map[string][]string{} // page -> clean paths it links to
	for _, page := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(src) {
			if l.target == "" || isExternal(l.target) {
				continue
			}
			file, frag, _ := strings.Cut(l.target, "#")
			dest := page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link to %s: %v", rel(page), l.line, l.target, err)
					continue
				}
				linked[page] = append(linked[page], filepath.Clean(dest))
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			target, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(headingAnchors(target), frag) {
				t.Errorf("%s:%d: link to %s: no heading with anchor #%s in %s", rel(page), l.line, l.target, frag, rel(dest))
			}
		}
	}
	index := filepath.Join(root, "docs", "README.md")
	for _, d := range docs {
		d = filepath.Clean(d)
		if !slices.Contains(linked[filepath.Join(root, "README.md")], d) {
			t.Errorf("README.md does not link to %s", rel(d))
		}
		if d != filepath.Clean(index) && !slices.Contains(linked[index], d) {
			t.Errorf("docs/README.md does not list %s", rel(d))
		}
	}
}

func rel(path string) string {
	return filepath.ToSlash(strings.TrimPrefix(filepath.Clean(path), ".."+string(filepath.Separator)))
}

func isExternal(target string) bool {
	return regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target)
}

// fencedBlocks returns the contents of the ``` blocks whose info string is
// lang.
func fencedBlocks(src []byte, lang string) []string {
	var out []string
	var cur *strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case cur == nil && fence:
			if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```")) == lang {
				cur = &strings.Builder{}
			} else {
				cur = nil
				// Skip a block in another language to its closing fence.
				for sc.Scan() && !strings.HasPrefix(strings.TrimSpace(sc.Text()), "```") { //nolint:revive // the loop's condition reads to the fence
				}
			}
		case cur != nil && fence:
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	return out
}

type link struct {
	target string
	line   int
}

var (
	linkRe       = regexp.MustCompile(`\]\(([^)\s]*)\)`)
	codeSpanRe   = regexp.MustCompile("`[^`]*`")
	headingRe    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	linkTextOnly = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// markdownLinks finds [text](target) links outside fenced blocks and code
// spans.
func markdownLinks(src []byte) []link {
	var out []link
	inFence := false
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		// A code span inside link text ([`deploy/`](deploy/)) is kept;
		// one elsewhere cannot hold a link.
		line = codeSpanRe.ReplaceAllStringFunc(line, func(s string) string {
			return strings.Repeat("x", len(s))
		})
		for _, m := range linkRe.FindAllStringSubmatch(line, -1) {
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// headingAnchors lists the anchors GitHub gives a page's headings:
// lowercased, punctuation dropped, spaces as hyphens, -1, -2... for
// repeats.
func headingAnchors(src []byte) []string {
	var out []string
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		m := headingRe.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		text := linkTextOnly.ReplaceAllString(m[1], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out = append(out, a)
	}
	return out
}
