// Package metricsdoc reads deploy/metrics.md, the reference of every metric
// the daemons serve. The tests that hold the code, the dashboard, the
// alerts and the end-to-end run to that reference all read it here.
package metricsdoc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Daemons are the pipeline daemons' table headings, in the file's
// order: the daemons the end-to-end run starts and scrapes.
var Daemons = []string{"ingest tail", "ingest load", "sweeper", "worker"}

// Headings are every table heading: the pipeline daemons, then the web
// console (scraped by cmd/console's test).
var Headings = append(slices.Clone(Daemons), "console")

// Metric is one row of a daemon's table.
type Metric struct {
	Daemon, Name, Type, Meaning string
	Labels                      []string
	Line                        int
}

// Doc is the parsed file.
type Doc struct {
	Metrics []Metric
}

var nameCell = regexp.MustCompile("^`pagewatch_[a-z0-9_]+`$")

// Read parses the file: a "## daemon" heading, then a table whose columns
// are the backticked metric name, its type, its labels ("—" for none) and
// its meaning. Every malformed row is reported, with its line.
func Read(path string) (*Doc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc := &Doc{}
	var errs []error
	bad := func(n int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", path, n, fmt.Sprintf(format, args...)))
	}
	daemon := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if h, ok := strings.CutPrefix(line, "## "); ok {
			daemon = h
			if !slices.Contains(Headings, daemon) {
				bad(n, "heading %q is no daemon (want one of %q)", h, Headings)
			}
			continue
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			bad(n, "want 4 columns (metric, type, labels, meaning), got %d", len(cells))
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		m := Metric{Daemon: daemon, Name: strings.Trim(cells[0], "`"), Type: cells[1], Meaning: cells[3], Line: n}
		if daemon == "" {
			bad(n, "metric %s before any daemon heading", m.Name)
		}
		if !nameCell.MatchString(cells[0]) {
			bad(n, "first column %q is no backticked pagewatch_ metric name", cells[0])
		}
		if cells[2] != "—" {
			for _, l := range strings.Split(cells[2], ",") {
				m.Labels = append(m.Labels, strings.TrimSpace(l))
			}
		}
		doc.Metrics = append(doc.Metrics, m)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(doc.Metrics) == 0 {
		errs = append(errs, fmt.Errorf("%s lists no metrics", path))
	}
	return doc, errors.Join(errs...)
}

// Names is the set of documented metric names.
func (d *Doc) Names() map[string]bool {
	out := map[string]bool{}
	for _, m := range d.Metrics {
		out[m.Name] = true
	}
	return out
}

// ByDaemon lists the documented names per pipeline daemon (Daemons);
// Of gives the console's.
func (d *Doc) ByDaemon() map[string][]string {
	out := map[string][]string{}
	for _, m := range d.Metrics {
		if slices.Contains(Daemons, m.Daemon) {
			out[m.Daemon] = append(out[m.Daemon], m.Name)
		}
	}
	return out
}

// Of lists the names documented under one heading.
func (d *Doc) Of(heading string) []string {
	var out []string
	for _, m := range d.Metrics {
		if m.Daemon == heading {
			out = append(out, m.Name)
		}
	}
	return out
}

// Serves reports whether a series name a query selects is served: a
// documented metric or one of a histogram's series (_bucket, _sum,
// _count), the Go client's go_* and process_* metrics, or one of extra
// (Prometheus' own up, an exporter's probe_success).
func (d *Doc) Serves(name string, extra ...string) bool {
	if slices.Contains(extra, name) || strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
		return true
	}
	names := d.Names()
	for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && names[base] {
			return true
		}
	}
	return false
}
