// Package secret holds configuration values that must never be printed:
// passwords, tokens, keys. A Value formats as "[redacted]" everywhere a
// value is likely to leak (fmt, slog, YAML, JSON); Reveal is the one way out.
// In the config file a secret can name where to read it instead of holding
// it: see UnmarshalYAML.
package secret

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Value is a secret string from the configuration.
type Value struct {
	s string
	// err is why the file or variable it names could not be read. It is
	// kept, not returned by the decoder, because one file configures all
	// daemons: a tailer must start without the SMTP password it never
	// uses. Err reports it to the Validate of the section that uses it.
	err error
}

// New returns a secret holding s.
func New(s string) Value { return Value{s: s} }

const redacted = "[redacted]"

// Reveal returns the secret itself, for handing to a client library.
func (v Value) Reveal() string { return v.s }

// IsSet reports whether a secret was configured.
func (v Value) IsSet() bool { return v.s != "" }

// Err is why the secret's source could not be read, or nil.
func (v Value) Err() error { return v.err }

func (v Value) mask() string {
	if v.s == "" {
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
// A source that names nothing readable is not a decoding error: see Err.
func (v *Value) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*v = Value{s: s}
		return nil
	case yaml.MappingNode:
	default:
		return errors.New("a secret is a string, {env: NAME} or {file: /path}")
	}
	var src source
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
	// Mistakes in the mapping itself are errors now; a source that cannot
	// be read is kept for Err.
	switch {
	case src.Env != "" && src.File != "":
		return errors.New("give env or file, not both")
	case src.Env == "" && src.File == "":
		return errors.New("write {env: NAME} or {file: /path}")
	case src.File != "" && !filepath.IsAbs(src.File):
		return fmt.Errorf("secret file %q: must be an absolute path", src.File)
	}
	s, err := src.read()
	if err != nil {
		err = fmt.Errorf("line %d: %w", n.Line, err)
	}
	*v = Value{s: s, err: err}
	return nil
}

type source struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`
}

func (src source) read() (string, error) {
	if src.Env != "" {
		s, ok := os.LookupEnv(src.Env)
		if !ok || s == "" {
			return "", fmt.Errorf("environment variable %s is not set or empty", src.Env)
		}
		return s, nil
	}
	data, err := readSmall(src.File)
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(data), "\r\n")
	if s == "" {
		return "", fmt.Errorf("secret file %s is empty", src.File)
	}
	return s, nil
}

// maxSecretBytes bounds a secret file: a path pointing at a device or a
// log by mistake must not hang or swallow the daemon at load.
const maxSecretBytes = 64 << 10

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		// The path is not secret; the content is never in the error.
		return nil, fmt.Errorf("secret file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("secret file %s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSecretBytes+1))
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	if len(data) > maxSecretBytes {
		return nil, fmt.Errorf("secret file %s: larger than %d KiB", path, maxSecretBytes>>10)
	}
	return data, nil
}
