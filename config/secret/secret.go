// Package secret holds configuration values that must never be printed:
// passwords, tokens, keys. A Value formats as "[redacted]" everywhere a
// value is likely to leak (fmt, slog, YAML, JSON); Reveal is the one way out.
// In the config file a secret can name where to read it instead of holding
// it: see UnmarshalYAML.
package secret

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

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

// UnmarshalYAML implements yaml.Unmarshaler. A secret is written in the
// config file as a literal string or, to keep it out of the file, as
//
//	password: {env: SMTP_PASSWORD}             # an environment variable
//	password: {file: /run/secrets/smtp_pass}   # a file's content
//
// which are read when the config is loaded, and again on each reload, so a
// rotated file or variable takes effect on SIGHUP. A file's trailing line
// break is dropped (Kubernetes and Docker secret files often end in one).
func (v *Value) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*v = Value(s)
		return nil
	case yaml.MappingNode:
	default:
		return errors.New("a secret is a string, {env: NAME} or {file: /path}")
	}
	var src struct {
		Env  string `yaml:"env"`
		File string `yaml:"file"`
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; k {
		case "env", "file":
		default:
			return fmt.Errorf("unknown key %q in a secret: write {env: NAME} or {file: /path}", k)
		}
	}
	if err := n.Decode(&src); err != nil {
		return err
	}
	switch {
	case src.Env != "" && src.File != "":
		return errors.New("give env or file, not both")
	case src.Env != "":
		s, ok := os.LookupEnv(src.Env)
		if !ok || s == "" {
			return fmt.Errorf("environment variable %s is not set or empty", src.Env)
		}
		*v = Value(s)
	case src.File != "":
		if !filepath.IsAbs(src.File) {
			return fmt.Errorf("secret file %q: must be an absolute path", src.File)
		}
		data, err := os.ReadFile(src.File)
		if err != nil {
			// The path is not secret; the content is never in the error.
			return fmt.Errorf("secret file: %w", err)
		}
		s := strings.TrimRight(string(data), "\r\n")
		if s == "" {
			return fmt.Errorf("secret file %s is empty", src.File)
		}
		*v = Value(s)
	default:
		return errors.New("write {env: NAME} or {file: /path}")
	}
	return nil
}
