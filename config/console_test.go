package config_test

import (
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/console"
)

// testHash is bcrypt("s3cret") at the lowest cost.
const testHash = "$2a$04$kqgydQQ55pbdZ6VFNbfmZ.zPMu869aRqlFH7WtjTf0JSxbe5iY0na"

// The schema docs/console.md gives, as the browser tests write it.
func TestConsoleSection(t *testing.T) {
	t.Setenv("PAGEWATCH_TEST_CONSOLE_TOKEN", "0123456789abcdef0123")
	cfg, err := parse(t, `console:
  listen: "127.0.0.1:19105"
  admin_listen: ""
  auth: password
  users:
    - {name: alice, password_hash: "`+testHash+`", role: operator}
    - {name: bob, password_hash: "`+testHash+`", role: viewer}
  tokens:
    - {name: ci, token: {env: PAGEWATCH_TEST_CONSOLE_TOKEN}, role: viewer}
  session_key: "0123456789abcdef0123456789abcdef"
`)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(config.Console); err != nil {
		t.Fatal(err)
	}
	c := cfg.Console
	if c.Listen != "127.0.0.1:19105" || len(c.Users) != 2 || c.Users[0].Role != console.Operator || c.Users[1].Role != console.Viewer ||
		c.Tokens[0].Token.Reveal() != "0123456789abcdef0123" || c.AdminListen != "" {
		t.Errorf("parsed %+v", c)
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"0123456789abcdef0123", "0123456789abcdef0123456789abcdef"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("--check-config shows a secret:\n%s", out)
		}
	}
}

func TestConsoleValidateNamesKeys(t *testing.T) {
	user := func(name, role string) string {
		return "{name: " + name + ", password_hash: '" + testHash + "', role: " + role + "}"
	}
	cases := map[string]string{
		// auth: none only where nobody else can connect.
		"console: {listen: '0.0.0.0:9105', auth: none}":                                "console.auth: none is allowed only when console.listen is a loopback address",
		"console: {listen: '192.168.1.5:80', auth: none}":                              "console.auth",
		"console: {auth: password}":                                                    "console.users: auth: password needs at least one user or token",
		"console: {auth: magic}":                                                       "console.auth: must be",
		"console: {users: [{name: a, password_hash: plain, role: operator}]}":          "console.users[0].password_hash: must be a bcrypt hash",
		"console: {users: [" + user("a", "admin") + "]}":                               "console.users[0].role",
		"console: {users: [" + user("a", "viewer") + ", " + user("a", "viewer") + "]}": `console.users[1].name: "a" is given twice`,
		"console: {tokens: [{name: t, token: short, role: viewer}]}":                   "console.tokens[0].token: must be at least 16 characters",
		"console: {auth: none, session_key: short}":                                    "console.session_key: must be at least 32 bytes",
		"console: {auth: none, zone: Mars/Olympus}":                                    "console.zone",
		"console: {auth: none, live_interval: 10ms}":                                   "console.live_interval",
		"console: {auth: none, tls_cert: /x.pem}":                                      "console.tls_cert",
	}
	for src, want := range cases {
		cfg, err := parse(t, src+"\n")
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		err = cfg.Validate(config.Console)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want it to contain %q", src, err, want)
		}
	}
	for _, ok := range []string{"console: {auth: none}", "console: {auth: none, listen: 'localhost:80'}", "console: {auth: none, listen: '[::1]:9105'}"} {
		cfg, err := parse(t, ok+"\n")
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(config.Console); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
