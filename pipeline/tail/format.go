package tail

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// DefaultFormat is the preset of an input that names no format.
const DefaultFormat = "combined"

// formatKeys are an input's alternative ways to give its format.
var formatKeys = [...]string{"format", "nginx_format", "apache_format", "json_format"}

// formatSpec says which of the format keys an input sets, and to what.
// Several set is an error of the later ones.
func (in Input) formatSpec() (key, value string, extra []string) {
	for i, v := range [...]string{in.Format, in.NginxFormat, in.ApacheFormat, in.JSONFormat} {
		if v == "" {
			continue
		}
		if key == "" {
			key, value = formatKeys[i], v
		} else {
			extra = append(extra, formatKeys[i])
		}
	}
	if key == "" {
		key, value = "format", DefaultFormat
	}
	return key, value, extra
}

// parser compiles the input's format once. vhost says whether the format
// logs the virtual host, which then names the site of an input without
// one. Errors start with the key they are about, relative to the input.
func (in Input) parser() (p logformat.Parser, vhost bool, err error) {
	key, value, extra := in.formatSpec()
	if len(extra) > 0 {
		return nil, false, fmt.Errorf("%s: cannot be given with %s; set only one of %s", extra[0], key, strings.Join(formatKeys[:], ", "))
	}
	if key == "format" {
		p, err = logformat.Preset(value)
		if err != nil {
			return nil, false, fmt.Errorf("format: unknown format %q (known: %s)", value, strings.Join(logformat.PresetNames(), ", "))
		}
		// json: nginx's variable names as keys, $host among them.
		return p, value == "vhost_combined" || value == "json", nil
	}
	kind := strings.TrimSuffix(key, "_format")
	p, err = logformat.Compile(kind, value)
	if err != nil {
		// Compile's errors repeat the kind and the whole format; the key
		// says the one and the file shows the other.
		msg := strings.TrimPrefix(err.Error(), "logformat: "+kind+" format "+strconv.Quote(value)+": ")
		return nil, false, fmt.Errorf("%s: %s", key, msg)
	}
	if kind == logformat.KindApache {
		return p, apacheLogsVhost(value), nil
	}
	return p, nginxLogsVhost(value), nil
}

// apacheLogsVhost reports whether a compiled Apache format has %v, %V or
// %{Host}i, read the way logformat reads the format.
func apacheLogsVhost(format string) bool {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("!<>,0123456789", format[i]) >= 0 {
			i++
		}
		var arg string
		if i < len(format) && format[i] == '{' {
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				return false
			}
			arg = format[i+1 : i+end]
			i += end + 1
		}
		if i >= len(format) {
			return false
		}
		switch format[i] {
		case 'v', 'V':
			return true
		case 'i':
			if strings.EqualFold(arg, "host") {
				return true
			}
		}
	}
	return false
}

// nginxLogsVhost reports whether a compiled nginx or JSON format has
// $host, $http_host or $server_name (Compile refuses a JSON template that
// mixes one with other text, so there it is a key's whole value).
func nginxLogsVhost(format string) bool {
	for i := 0; i < len(format); i++ {
		if format[i] != '$' {
			continue
		}
		j := i + 1
		if j < len(format) && format[j] == '{' {
			j++
		}
		k := j
		for k < len(format) && (format[k] == '_' || format[k] >= 'a' && format[k] <= 'z' ||
			format[k] >= 'A' && format[k] <= 'Z' || format[k] >= '0' && format[k] <= '9') {
			k++
		}
		switch format[j:k] {
		case "host", "http_host", "server_name":
			return true
		}
	}
	return false
}

// normalizeHost is the site a vhost names (hitBatch.siteOf), or "".
func normalizeHost(v []byte) string {
	if i := strings.LastIndexByte(string(v), ':'); i >= 0 && strings.IndexByte(string(v[:i]), ':') < 0 {
		port := v[i+1:]
		digits := len(port) > 0
		for _, c := range port {
			digits = digits && c >= '0' && c <= '9'
		}
		if digits {
			v = v[:i]
		}
	} else if i >= 0 && v[0] == '[' {
		// [2001:db8::1]:8080
		if j := strings.LastIndexByte(string(v), ']'); j > 0 && j < len(v)-1 && v[j+1] == ':' {
			v = v[:j+1]
		}
	}
	if n := len(v); n > 1 && v[n-1] == '.' {
		v = v[:n-1]
	}
	// "-" is a missing Host header; a host name has at most 253 bytes.
	if len(v) == 0 || len(v) > 253 || len(v) == 1 && v[0] == '-' {
		return ""
	}
	return strings.ToLower(string(v))
}
