package tail

import (
	"errors"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// StreamInput is a source of access-log lines that is not a file: the
// `ingest.tail.stdin` section (Apache's piped logs, `ingest tail --stdin`)
// and `ingest.tail.syslog_input` (lines received by ingest.tail.syslog).
//
// Such a source cannot be replayed: once read, its lines exist only in
// ingest's memory until JetStream acknowledges them. Whatever the pipe or
// the kernel's socket buffers held, and what was read but not yet
// acknowledged, when ingest died is lost. A file input has no such gap,
// since the file still holds the lines and the stream holds the position.
type StreamInput struct {
	// Site, Format, NginxFormat, ApacheFormat and JSONFormat are those of
	// an Input: without a site each line's virtual host is its site.
	Site         string `yaml:"site"`
	Format       string `yaml:"format"`
	NginxFormat  string `yaml:"nginx_format"`
	ApacheFormat string `yaml:"apache_format"`
	JSONFormat   string `yaml:"json_format"`
	// FlushInterval bounds how long a line waits in an unfilled batch, so
	// a quiet pipe or socket still delivers its hits within it. A file
	// needs no such bound: it publishes whenever it reaches its end.
	FlushInterval time.Duration `yaml:"flush_interval"`
	// MaxInFlight is how many batches may await JetStream's ack at once.
	// Past it reading stops, which is the backpressure: a pipe fills and
	// its writer blocks, a TCP sender queues, UDP datagrams are dropped.
	MaxInFlight int `yaml:"max_in_flight"`
}

// DefaultStreamInput returns the defaults of ingest.tail.stdin and
// ingest.tail.syslog_input: the combined format and no site, which must
// be set (or a format logging the virtual host chosen) to use them.
func DefaultStreamInput() StreamInput {
	return StreamInput{FlushInterval: time.Second, MaxInFlight: 4}
}

// input is the section as an Input, to share its format and site rules.
func (s StreamInput) input() Input {
	return Input{Site: s.Site, Format: s.Format, NginxFormat: s.NginxFormat, ApacheFormat: s.ApacheFormat, JSONFormat: s.JSONFormat}
}

// set reports whether the file changed the section from its defaults:
// only then is it checked by Validate, since the defaults name no site
// and are invalid until the section is used.
func (s StreamInput) set() bool { return s != DefaultStreamInput() }

// parser compiles the section's format after checking the section;
// errors name key, e.g. "ingest.tail.stdin".
func (s StreamInput) parser(key string) (logformat.Parser, error) {
	var errs []error
	p, vhost, err := s.input().parser()
	if err != nil {
		errs = append(errs, fmt.Errorf("%s.%w", key, err))
	} else if s.Site == "" && !vhost {
		k, v, _ := s.input().formatSpec()
		errs = append(errs, fmt.Errorf("%s.site: must be set, since %s %q logs no virtual host to take the site from", key, k, v))
	}
	if s.FlushInterval < 10*time.Millisecond || s.FlushInterval > time.Minute {
		errs = append(errs, fmt.Errorf("%s.flush_interval: must be 10ms..1m, got %s", key, s.FlushInterval))
	}
	if s.MaxInFlight < 1 || s.MaxInFlight > 64 {
		errs = append(errs, fmt.Errorf("%s.max_in_flight: must be 1..64, got %d", key, s.MaxInFlight))
	}
	return p, errors.Join(errs...)
}

// Keys of the stream sections, for errors.
const (
	keyStdin       = "ingest.tail.stdin"
	keySyslogInput = "ingest.tail.syslog_input"
)

// validateStreams is Validate's part about syslog and stdin: the syslog
// listener's own section always, and a stream section when it is used
// (syslog_input with a listen address) or set in the file. The stdin
// section is checked again by NewStdin, which uses it.
func (c Config) validateStreams() error {
	errs := []error{c.Syslog.Validate()}
	if c.Syslog.Enabled() || c.SyslogInput.set() {
		_, err := c.SyslogInput.parser(keySyslogInput)
		errs = append(errs, err)
	}
	if c.Stdin.set() {
		_, err := c.Stdin.parser(keyStdin)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// hasSource reports whether the config names anything to read: Validate
// then accepts an empty inputs list (syslog only, or stdin only for the
// piped logger).
func (c Config) hasSource() bool {
	return len(c.Inputs) > 0 || c.Syslog.Enabled() || c.Stdin.set()
}

// ValidateStdin checks ingest.tail.stdin for `ingest tail --stdin`, which
// uses it even when the file leaves it at its defaults.
func (c Config) ValidateStdin() error {
	_, err := c.Stdin.parser(keyStdin)
	return err
}
