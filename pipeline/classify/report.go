package classify

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// Report counts the lines of an access log by class, and each class's
// user agents, for `ingest tail --classify`: what the classes make of a
// site's traffic, before it is counted by them.
type Report struct {
	cache *Cache
	// Counts says which classes count as views (the Normalizer's Counts);
	// nil: the report does not say.
	Counts func(hit.Class) bool
	// Top is how many user agents Write lists per class (default 10).
	Top int

	lines, malformed int
	classes          []classCount // by hit.Class
}

type classCount struct {
	lines int
	uas   map[string]int
	other int // lines of user agents past maxAgents
}

// maxAgents bounds the distinct user agents a report keeps per class, so
// a log of random user agents cannot take the memory; lines past it are
// counted as "others".
const maxAgents = 1 << 16

// NewReport makes an empty report classifying with c.
func NewReport(c *Classifier) *Report {
	return &Report{cache: c.NewCache(0), Top: 10, classes: make([]classCount, len(hit.Classes()))}
}

// Add counts a parsed line.
func (r *Report) Add(e *logformat.Entry) {
	r.lines++
	cl := r.cache.Class(e.UserAgent)
	cc := &r.classes[cl]
	cc.lines++
	if cc.uas == nil {
		cc.uas = map[string]int{}
	}
	if _, ok := cc.uas[string(e.UserAgent)]; ok || len(cc.uas) < maxAgents {
		cc.uas[string(e.UserAgent)]++
	} else {
		cc.other++
	}
}

// maxLine is the longest line AddLog reads whole; the parser refuses
// those over logformat.MaxLineLen (64 KiB) as too long, as ingest does.
const maxLine = 1 << 20

// AddLog parses each line of an access log with p and adds it; a line p
// rejects is counted as malformed.
func (r *Report) AddLog(rd io.Reader, p logformat.Parser) error {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var e logformat.Entry
	for sc.Scan() {
		if err := p.Parse(sc.Bytes(), &e); err != nil {
			r.lines++
			r.malformed++
			continue
		}
		r.Add(&e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: longer than %d bytes", r.lines+1, maxLine)
		}
		return err
	}
	return nil
}

// Write prints the lines per class and each class's top user agents.
func (r *Report) Write(out io.Writer) error {
	w := &stickyWriter{w: out}
	top := r.Top
	if top <= 0 {
		top = 10
	}
	fmt.Fprintf(w, "%8s  %6s  %s\n", "lines", "share", "class")
	for _, cl := range hit.Classes() {
		n := r.classes[cl].lines
		fmt.Fprintf(w, "%8d  %6s  %s%s\n", n, share(n, r.lines), cl, r.counted(cl))
	}
	if r.malformed > 0 {
		fmt.Fprintf(w, "%8d  %6s  (malformed lines)\n", r.malformed, share(r.malformed, r.lines))
	}
	fmt.Fprintf(w, "%8d  %6s  (all lines)\n", r.lines, "")
	for _, cl := range hit.Classes() {
		cc := r.classes[cl]
		if cc.lines == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %d user agents\n", cl, len(cc.uas))
		for _, a := range topAgents(cc.uas, top) {
			fmt.Fprintf(w, "%8d  %s\n", a.n, printable(a.ua))
		}
		if rest := len(cc.uas) - top; rest > 0 || cc.other > 0 {
			fmt.Fprintf(w, "%8s  (%d more user agents", "", max(rest, 0))
			if cc.other > 0 {
				fmt.Fprintf(w, "; %d lines of user agents past the first %d", cc.other, maxAgents)
			}
			fmt.Fprintln(w, ")")
		}
	}
	return w.err
}

// stickyWriter keeps the first error of its writes and drops those that
// follow, so that Write checks one error rather than each Fprintf's.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

func (r *Report) counted(cl hit.Class) string {
	switch {
	case r.Counts == nil:
		return ""
	case r.Counts(cl):
		return " (counted)"
	}
	return " (not counted)"
}

func share(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

type agentCount struct {
	ua string
	n  int
}

// topAgents is the n most frequent user agents, ties by name so that
// reports compare.
func topAgents(uas map[string]int, n int) []agentCount {
	all := make([]agentCount, 0, len(uas))
	for ua, c := range uas {
		all = append(all, agentCount{ua, c})
	}
	slices.SortFunc(all, func(a, b agentCount) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.ua, b.ua))
	})
	return all[:min(n, len(all))]
}

// printable quotes a user agent that would garble a terminal, and names
// an empty one.
func printable(ua string) string {
	if ua == "" {
		return `""`
	}
	for i := 0; i < len(ua); i++ {
		if ua[i] < 0x20 || ua[i] == 0x7f {
			return fmt.Sprintf("%q", ua)
		}
	}
	return ua
}

// Lines is the number of lines of class cl added.
func (r *Report) Lines(cl hit.Class) int {
	if int(cl) >= len(r.classes) {
		return 0
	}
	return r.classes[cl].lines
}
