// Package secret holds configuration values that must never be printed:
// passwords, tokens, keys. A Value formats as "[redacted]" everywhere a
// value is likely to leak (fmt, slog, YAML, JSON); Reveal is the one way out.
package secret

import "log/slog"

// Value is a secret string from the configuration.
type Value string

const redacted = "[redacted]"

// Reveal returns the secret itself, for handing to a client library.
func (v Value) Reveal() string { return string(v) }

// IsSet reports whether a secret was configured.
func (v Value) IsSet() bool { return v != "" }

func (v Value) mask() string {
	if v == "" {
		return ""
	}
	return redacted
}

// String implements fmt.Stringer so %s and %v never show the secret.
func (v Value) String() string { return v.mask() }

// GoString implements fmt.GoStringer so %#v never shows the secret.
func (v Value) GoString() string { return `"` + v.mask() + `"` }

// LogValue implements slog.LogValuer.
func (v Value) LogValue() slog.Value { return slog.StringValue(v.mask()) }

// MarshalYAML implements yaml.Marshaler (used by --check-config).
func (v Value) MarshalYAML() (any, error) { return v.mask(), nil }

// MarshalText implements encoding.TextMarshaler (JSON and friends).
func (v Value) MarshalText() ([]byte, error) { return []byte(v.mask()), nil }
