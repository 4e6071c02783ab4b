package tail

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/discover"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
	"github.com/pagewatch/pagewatch/pipeline/syslog"
	"github.com/pagewatch/pagewatch/pipeline/visitor"
)

// Config is the `ingest.tail:` section.
type Config struct {
	// Listen is the admin address serving /metrics, /healthz and /readyz.
	Listen string `yaml:"listen"`
	// Instance names this tailer; positions are kept per instance and
	// file, so every replica needs its own. Default: the host name.
	Instance string  `yaml:"instance"`
	Inputs   []Input `yaml:"inputs"`
	// Discover finds the files of inputs whose path is a glob (files.go).
	Discover discover.Config `yaml:"discover"`
	// MaxFiles bounds the files followed at once, literal inputs
	// included: every file costs a goroutine, a lease renewal every
	// lease_ttl/3 and metric series labelled with its path.
	MaxFiles int `yaml:"max_files"`
	// LeaseTTL is how long a file's lease outlives a tailer that died
	// holding it (lease.go): how soon another tailer on the host takes
	// the file over.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// StartAt is where a file with no saved position starts when it exists
	// at start-up: "end" (only new lines) or "beginning". A file that
	// appears while ingest runs is always read from its beginning.
	StartAt      string        `yaml:"start_at"`
	PollInterval time.Duration `yaml:"poll_interval"`
	// RotateGrace is how long a renamed-away file is still read after a
	// new file appeared at its path, and after its last new line: the
	// time the web server takes to reopen its logs. A deleted file is
	// closed once quiet that long, and a rotated file found after a
	// restart is read until it has not changed for that long.
	RotateGrace    time.Duration `yaml:"rotate_grace"`
	BatchLines     int           `yaml:"batch_lines"`
	BatchBytes     int           `yaml:"batch_bytes"`
	MaxLineBytes   int           `yaml:"max_line_bytes"`
	PublishTimeout time.Duration `yaml:"publish_timeout"`
	// Pages says which lines are page views and how their paths are
	// normalised; one section for every input, so a page is spelled the
	// same whichever file it came from.
	Pages pageview.Config `yaml:"pages"`
	// Visitors says whether each hit gets a client key, for counting
	// visitors (pipeline/visitor, docs/privacy.md).
	Visitors visitor.Config `yaml:"visitors"`
	// Stdin is what `ingest tail --stdin` reads (Apache's piped logs), in
	// place of inputs and syslog; see Stdin.
	Stdin StreamInput `yaml:"stdin"`
	// Syslog receives lines by syslog beside the files when it has a
	// listen address; SyslogInput says how to read them (syslogin.go).
	Syslog      syslog.Config `yaml:"syslog"`
	SyslogInput StreamInput   `yaml:"syslog_input"`
}

// Input is one access-log file.
type Input struct {
	Path string `yaml:"path"`
	// Site is recorded with every hit of this file, e.g. "example.com".
	// Without it each line's virtual host is its site, so the format must
	// log one (vhost_combined, json, $host, $server_name, %v, %{Host}i).
	Site string `yaml:"site"`
	// Format is a preset of logformat: combined (the default), common,
	// nginx, vhost_combined or json. In its place, one of NginxFormat,
	// ApacheFormat or JSONFormat gives the server's own format string,
	// compiled by logformat.Compile.
	Format       string `yaml:"format"`
	NginxFormat  string `yaml:"nginx_format"`
	ApacheFormat string `yaml:"apache_format"`
	JSONFormat   string `yaml:"json_format"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		Listen:         "127.0.0.1:9101",
		Instance:       sanitizeInstance(host),
		Discover:       discover.DefaultConfig(),
		MaxFiles:       1000,
		LeaseTTL:       15 * time.Second,
		StartAt:        "end",
		PollInterval:   250 * time.Millisecond,
		RotateGrace:    5 * time.Second,
		BatchLines:     5000,
		BatchBytes:     512 << 10,
		MaxLineBytes:   64 << 10,
		PublishTimeout: 10 * time.Second,
		Pages:          pageview.DefaultConfig(),
		Visitors:       visitor.DefaultConfig(),
		Stdin:          DefaultStreamInput(),
		Syslog:         syslog.DefaultConfig(),
		SyslogInput:    DefaultStreamInput(),
	}
}

var instanceRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func sanitizeInstance(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "ingest"
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

// Validate reports every problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !instanceRE.MatchString(c.Instance) {
		add("ingest.tail.instance: must match %s, got %q", instanceRE, c.Instance)
	}
	if !c.hasSource() {
		add("ingest.tail.inputs: at least one input file is needed (or ingest.tail.syslog.listen_udp or listen_tcp, or ingest.tail.stdin for `ingest tail --stdin`)")
	}
	errs = append(errs, c.validateFiles())
	for i, in := range c.Inputs {
		_, vhost, err := in.parser()
		if err != nil {
			add("ingest.tail.inputs[%d].%w", i, err)
		} else if in.Site == "" && !vhost {
			key, value, _ := in.formatSpec()
			add("ingest.tail.inputs[%d].site: must be set, since %s %q logs no virtual host to take the site from", i, key, value)
		}
	}
	if c.StartAt != "end" && c.StartAt != "beginning" {
		add(`ingest.tail.start_at: must be "end" or "beginning", got %q`, c.StartAt)
	}
	if c.PollInterval <= 0 {
		add("ingest.tail.poll_interval: must be positive, got %s", c.PollInterval)
	}
	if c.RotateGrace < 0 {
		add("ingest.tail.rotate_grace: must not be negative, got %s", c.RotateGrace)
	}
	if c.BatchLines < 1 {
		add("ingest.tail.batch_lines: must be at least 1, got %d", c.BatchLines)
	}
	// NATS refuses messages over max_payload (1 MiB by default); stay under.
	if c.BatchBytes < 4<<10 || c.BatchBytes > 900<<10 {
		add("ingest.tail.batch_bytes: must be 4096..921600, got %d", c.BatchBytes)
	}
	// The parser takes lines of up to logformat.MaxLineLen; a batch must
	// hold a line of the longest and room to spare (consumePending sends
	// it on once within max_line_bytes and 1 KiB of batch_bytes).
	if hi := min(logformat.MaxLineLen, c.BatchBytes/2); c.MaxLineBytes < 1<<10 || c.MaxLineBytes > hi {
		add("ingest.tail.max_line_bytes: must be 1024..%d (64 KiB, the parser's longest, and half of batch_bytes), got %d", hi, c.MaxLineBytes)
	}
	if c.PublishTimeout <= 0 {
		add("ingest.tail.publish_timeout: must be positive, got %s", c.PublishTimeout)
	}
	if err := c.Pages.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Visitors.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateStreams(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
