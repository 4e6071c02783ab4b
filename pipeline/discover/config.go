package discover

import (
	"errors"
	"fmt"
	"time"
)

// Config is the `ingest.tail.discover:` section, plus the globs to follow,
// which come from `ingest.tail.inputs[i].path` (glob i is input i, so the
// tailer can map a found file back to its input with Watcher.Match).
type Config struct {
	// Paths are absolute globs: `*`, `?` and `[...]` match within one
	// path segment (path.Match), `**` as a whole segment matches any number
	// of directories, none included. A path without wildcards is a glob
	// too, matching that one file.
	Paths []string `yaml:"-"`
	// Exclude drops files the globs match. A pattern without a `/` is
	// matched against the base name (`*.gz`, `error.log`); one with a `/`
	// against the whole path, and must be absolute or start with `**/`
	// (`/var/log/nginx/old/**`, `**/archive/**`). A whole-path pattern
	// ending in `/**` also keeps its directories from being read and
	// watched.
	Exclude []string `yaml:"exclude"`
	// ExcludeRotated adds RotatedExcludes to Exclude: rotated and
	// compressed siblings (`access.log.1`, `access.log.2.gz`,
	// `access.log-20261122`) are read through rotation handling and
	// backfill, never followed as live inputs.
	ExcludeRotated bool `yaml:"exclude_rotated"`
	// Inotify turns on event-driven discovery. Without it (or when inotify
	// fails: watch limit reached, no instances left) files are found by
	// polling alone.
	Inotify bool `yaml:"inotify"`
	// PollInterval is how often every glob is scanned in full. It runs
	// beside inotify too, which misses changes made on other NFS clients
	// and can overflow.
	PollInterval time.Duration `yaml:"poll_interval"`
	// Debounce is how long changes are collected after the first event of
	// a burst before they are looked at, so a thousand files created at
	// once cost one pass, and a rotation's rename-then-create is usually
	// seen as one change.
	Debounce time.Duration `yaml:"debounce"`
}

const maxDebounce = 10 * time.Second

// DefaultConfig returns the defaults; Paths is left empty.
func DefaultConfig() Config {
	return Config{
		ExcludeRotated: true,
		Inotify:        true,
		PollInterval:   10 * time.Second,
		Debounce:       100 * time.Millisecond,
	}
}

// RotatedExcludes returns the base-name patterns of rotated and compressed
// siblings of a log: numbered (logrotate, savelog), dated (logrotate's
// dateext and common dateformats) and compressed. A custom logrotate
// dateformat or extension needs its own exclude.
func RotatedExcludes() []string {
	const d = "[0-9]"
	return []string{
		"*." + d, "*." + d + d, "*." + d + d + d, // access.log.1 .. access.log.999
		"*-" + d + d + d + d + d + d + d + d,             // -%Y%m%d
		"*-" + d + d + d + d + d + d + d + d + d + d,     // -%Y%m%d%H, -%s
		"*-" + d + d + d + d + "-" + d + d + "-" + d + d, // -%Y-%m-%d
		"*.gz", "*.bz2", "*.xz", "*.zst", "*.lz4", "*.zip",
	}
}

// excludes returns the effective exclude patterns.
func (c Config) excludes() []string {
	if !c.ExcludeRotated {
		return c.Exclude
	}
	return append(append([]string{}, c.Exclude...), RotatedExcludes()...)
}

// Validate reports every problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Paths) == 0 {
		add("ingest.tail.inputs: at least one input path is needed")
	}
	seen := map[string]bool{}
	for i, p := range c.Paths {
		if _, err := compileInclude(p); err != nil {
			add("ingest.tail.inputs[%d].path: %v", i, err)
		}
		if seen[p] {
			add("ingest.tail.inputs[%d].path: %q listed twice", i, p)
		}
		seen[p] = true
	}
	for i, p := range c.Exclude {
		if _, err := compileExclude(p); err != nil {
			add("ingest.tail.discover.exclude[%d]: %v", i, err)
		}
	}
	if c.PollInterval <= 0 {
		add("ingest.tail.discover.poll_interval: must be positive, got %s", c.PollInterval)
	}
	// Longer would only delay finding files: a burst is collected within
	// milliseconds.
	if c.Debounce < 0 || c.Debounce > maxDebounce {
		add("ingest.tail.discover.debounce: must be 0s..%s, got %s", maxDebounce, c.Debounce)
	}
	return errors.Join(errs...)
}
