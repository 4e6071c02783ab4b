package logformat

import (
	"fmt"
	"sort"
)

// Parser parses one access log line into e, overwriting all of e, with the
// same contract as Parse: the line may end in \n or \r\n, the slices of e
// alias line, and a rejected line gives a *ParseError whose Reason is one
// of Reasons(). Every Parser here is safe for concurrent use, so one value
// can be shared by goroutines. The only state one keeps between lines is a
// cache of the day of the last time parsed, which saves work but never
// changes a result.
type Parser interface {
	Parse(line []byte, e *Entry) error
}

// ParserFunc adapts a function to Parser.
type ParserFunc func(line []byte, e *Entry) error

// Parse calls f.
func (f ParserFunc) Parse(line []byte, e *Entry) error { return f(line, e) }

// Kinds of format string Compile understands.
const (
	KindNginx  = "nginx"  // an nginx log_format string: $remote_addr - ...
	KindApache = "apache" // an Apache LogFormat string: %h %l %u %t ...
	KindJSON   = "json"   // an nginx log_format ... escape=json template, or "" for the default keys
)

// Formats of the presets, as the servers define them. nginx's predefined
// "combined" is the same line as Apache's, so both names share one parser.
const (
	ApacheCommon        = `%h %l %u %t "%r" %>s %b`
	ApacheCombined      = `%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"`
	ApacheVhostCombined = `%v:%p %h %l %u %t "%r" %>s %O "%{Referer}i" "%{User-Agent}i"`
	NginxCombined       = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`
)

var presets = map[string]func() (Parser, error){
	// Parse is hand-written for these two and faster than any compiled
	// format; it accepts both (common is combined's prefix).
	"combined":       func() (Parser, error) { return ParserFunc(Parse), nil },
	"common":         func() (Parser, error) { return ParserFunc(Parse), nil },
	"nginx":          func() (Parser, error) { return ParserFunc(Parse), nil },
	"vhost_combined": func() (Parser, error) { return Compile(KindApache, ApacheVhostCombined) },
	"json":           func() (Parser, error) { return Compile(KindJSON, "") },
}

// PresetNames lists the names Preset accepts, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns the parser for a well-known format: "combined", "common",
// "nginx" (nginx's predefined combined), "vhost_combined" (Apache's, with
// the vhost and port first) or "json" (nginx escape=json lines with the
// default keys, see Compile).
func Preset(name string) (Parser, error) {
	mk, ok := presets[name]
	if !ok {
		return nil, fmt.Errorf("logformat: unknown preset %q (known: %v)", name, PresetNames())
	}
	return mk()
}

// Compile turns a server's log format definition into a Parser.
//
// For KindNginx and KindApache the format is the string between the quotes
// of the server's configuration (Apache's \" may be left escaped). It is
// compiled once into a sequence of steps, each matching a literal or
// taking a field up to the literal that follows it, so parsing a line uses
// no regular expression and does not allocate. Fields pagewatch has no use
// for ($request_time, %D, $upstream_addr, ...) are skipped. The format must
// log a time and the request (or its method and path), since those are
// what a page view is.
//
// For KindJSON the format is the nginx template, e.g.
// {"ip":"$remote_addr","t":"$time_iso8601",...}, from which the key of
// each variable is read; "" means keys named after the variables
// (remote_addr, time_local or time_iso8601, request or request_method and
// request_uri, status, body_bytes_sent, http_referer, http_user_agent,
// host or server_name).
//
// Errors name the kind, the offending token and its byte position.
func Compile(kind, format string) (Parser, error) {
	switch kind {
	case KindNginx:
		return compileNginx(format)
	case KindApache:
		return compileApache(format)
	case KindJSON:
		return compileJSON(format)
	}
	return nil, fmt.Errorf("logformat: unknown format kind %q (want %q, %q or %q)", kind, KindNginx, KindApache, KindJSON)
}

// trimLine drops the line's \n or \r\n and rejects empty and over-long
// lines, as Parse does.
func trimLine(line []byte) ([]byte, error) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) == 0 {
		return nil, fail(ReasonEmpty, 0)
	}
	if len(line) > MaxLineLen {
		return nil, fail(ReasonTooLong, MaxLineLen)
	}
	return line, nil
}
