package config_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/config"
)

func parse(t *testing.T, src string) (config.Config, error) {
	t.Helper()
	cfg := config.Default()
	err := config.Parse([]byte(src), &cfg)
	return cfg, err
}

func TestErrorsNameTheKey(t *testing.T) {
	cases := map[string]string{
		"nats:\n  urll: x\n":                                 `nats.urll (line 2): unknown key`,
		"worker:\n  lock_ttl: 15\n":                          `worker.lock_ttl (line 2): duration must be a string`,
		"worker:\n  lock_ttl: 15 seconds\n":                  `worker.lock_ttl (line 2): invalid duration`,
		"worker:\n  concurrency: many\n":                     `worker.concurrency (line 2)`,
		"ingest:\n  tail:\n    inputs: /x\n":                 `ingest.tail.inputs (line 3): expected a list`,
		"sweeper:\n  rules:\n    - name: a\n      nope: 1\n": `sweeper.rules[0].nope (line 4): unknown key`,
		"log: [1]\n": `log (line 1): expected a mapping`,
	}
	for src, want := range cases {
		_, err := parse(t, src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want it to contain %q", src, err, want)
		}
	}
}

// A secret whose variable or file is missing stops only the daemons that
// use it: the tailer starts without the SMTP password.
func TestUnreadableSecretFailsOnlyItsUsers(t *testing.T) {
	cfg, err := parse(t, "ingest:\n  tail:\n    inputs: [{path: /var/log/a.log, site: example.com}]\nmail:\n  transport: smtp\n  smtp:\n    host: mail\n    auth: plain\n    username: u\n    password: {env: PAGEWATCH_UNSET_FOR_TEST}\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(config.IngestTail); err != nil {
		t.Errorf("ingest tail: %v", err)
	}
	err = cfg.Validate(config.Worker)
	want := "mail.smtp.password: line 10: environment variable PAGEWATCH_UNSET_FOR_TEST is not set"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "must be set") {
		t.Errorf("worker: got %v, want %q alone", err, want)
	}
}

func TestValidateNamesKeys(t *testing.T) {
	cfg, err := parse(t, "worker:\n  concurrency: 0\nmail:\n  transport: pigeon\n")
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate(config.Worker)
	for _, want := range []string{"worker.concurrency", "mail.transport"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to name %s", err, want)
		}
	}
}

// The example file documents every key with its default: parsing it must
// give exactly the defaults, and every key of the config must appear in it.
func TestExampleFileIsTheDefaults(t *testing.T) {
	path := filepath.Join("..", "deploy", "pagewatch.example.yaml")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	def := config.Default()
	// Host-dependent defaults are left empty in the file.
	cfg.Ingest.Tail.Instance, cfg.Worker.Name = def.Ingest.Tail.Instance, def.Worker.Name
	if !reflect.DeepEqual(cfg, def) {
		a, _ := cfg.Redacted()
		b, _ := def.Redacted()
		t.Fatalf("example differs from defaults:\n--- example\n%s\n--- defaults\n%s", a, b)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := def.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	var tree yaml.Node
	if err := yaml.Unmarshal(rendered, &tree); err != nil {
		t.Fatal(err)
	}
	for _, key := range leafKeys(tree.Content[0], "") {
		last := key[strings.LastIndex(key, ".")+1:]
		if !bytes.Contains(data, []byte(last+":")) {
			t.Errorf("example file does not document %s", key)
		}
	}
}

func leafKeys(n *yaml.Node, prefix string) []string {
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := prefix + n.Content[i].Value
		if n.Content[i+1].Kind == yaml.MappingNode {
			out = append(out, leafKeys(n.Content[i+1], k+".")...)
		} else {
			out = append(out, k)
		}
	}
	return out
}

func TestSecretsAreNeverPrinted(t *testing.T) {
	cfg, err := parse(t, "nats:\n  url: nats://bob:hunter1@127.0.0.1:4222\n  user: u\n  password: hunter2\nclickhouse:\n  password: hunter3\nmail:\n  smtp:\n    password: hunter4\n")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("hunter")) {
		t.Fatalf("secret printed:\n%s", out)
	}
	if cfg.NATS.Password.Reveal() != "hunter2" {
		t.Fatal("secret not decoded")
	}
}

func TestEmptyFileMeansDefaults(t *testing.T) {
	cfg, err := parse(t, "")
	if err != nil || !reflect.DeepEqual(cfg, config.Default()) {
		t.Fatalf("empty file: %v", err)
	}
}
