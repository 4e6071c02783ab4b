package secret_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/config/secret"
)

type holder struct {
	Password secret.Value `yaml:"password"`
}

func decode(t *testing.T, src string) (secret.Value, error) {
	t.Helper()
	var h holder
	err := yaml.Unmarshal([]byte(src), &h)
	return h.Password, err
}

func TestSecretSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pass")
	if err := os.WriteFile(file, []byte("from-file-Zq9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PAGEWATCH_TEST_SECRET", "from-env-Xk7")

	for src, want := range map[string]string{
		"password: literal-Yv3":                      "literal-Yv3",
		"password: {env: PAGEWATCH_TEST_SECRET}":     "from-env-Xk7",
		fmt.Sprintf("password: {file: %s}", file):    "from-file-Zq9",
		fmt.Sprintf("password:\n  file: %s\n", file): "from-file-Zq9",
		"password: \"has: colon\"":                   "has: colon",
	} {
		got, err := decode(t, src)
		if err != nil || got.Reveal() != want {
			t.Errorf("%q: got %q, %v; want %q", src, got.Reveal(), err, want)
		}
	}
}

// A source that cannot be read decodes, keeping the reason for the
// Validate of the section that uses it (one file serves every daemon); a
// malformed source is a decoding error.
func TestSecretSourceErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PAGEWATCH_TEST_EMPTY", "")
	for src, want := range map[string]string{
		"password: {env: PAGEWATCH_TEST_UNSET_VAR}":               "line 1: environment variable PAGEWATCH_TEST_UNSET_VAR is not set",
		"password: {env: PAGEWATCH_TEST_EMPTY}":                   "PAGEWATCH_TEST_EMPTY is not set or empty",
		"password: {file: " + filepath.Join(dir, "missing") + "}": "no such file",
		"password: {file: " + empty + "}":                         "is empty",
		"password: {file: " + dir + "}":                           "not a regular file",
		"password: {file: /dev/zero}":                             "not a regular file",
	} {
		v, err := decode(t, src)
		if err != nil || v.IsSet() || v.Err() == nil || !strings.Contains(v.Err().Error(), want) {
			t.Errorf("%q: decode error %v, Err() %v; want Err() containing %q", src, err, v.Err(), want)
		}
	}
	for src, want := range map[string]string{
		"password: {file: relative/path}": "must be an absolute path",
		"password: {env: A, file: /b}":    "not both",
		"password: {vault: x}":            `unknown key "vault"`,
		"password: {}":                    "write {env: NAME} or {file: /path}",
		"password: [a]":                   "a secret is a string",
	} {
		_, err := decode(t, src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", src, err, want)
		}
	}
}

// However a secret is formatted or logged, it shows as [redacted].
func TestSecretNeverPrinted(t *testing.T) {
	v := secret.New("hunter2-Qw8")
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "pw", v, "h", holder{Password: v})
	slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "pw", v)
	js, _ := json.Marshal(holder{Password: v})
	y, _ := yaml.Marshal(holder{Password: v})
	out := strings.Join([]string{fmt.Sprint(v), fmt.Sprintf("%v %s %q %#v %+v", v, v, v, v, holder{v}), logs.String(), string(js), string(y)}, "\n")
	if strings.Contains(out, "hunter2") {
		t.Fatalf("secret printed:\n%s", out)
	}
	if v.Reveal() != "hunter2-Qw8" {
		t.Fatal("Reveal lost the value")
	}
}
