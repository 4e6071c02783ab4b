package systemd_test

// Checks the systemd units, their config and the logrotate file: each unit
// runs one of our daemons with its hardening and its credentials; the
// config loads as each unit would see it; the real binaries accept each
// ExecStart line; systemd-analyze verifies the units; and logrotate rotates
// a log by renaming it and signals nginx to reopen.

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// The units and what each must run.
var units = map[string]struct {
	part     config.Part
	bin, cmd string
}{
	"pagewatch-ingest-tail.service": {config.IngestTail, "ingest", "tail"},
	"pagewatch-ingest-load.service": {config.IngestLoad, "ingest", "load"},
	"pagewatch-sweeper.service":     {config.Sweeper, "sweeper", "run"},
	"pagewatch-worker.service":      {config.Worker, "worker", "run"},
	"pagewatch-console.service":     {config.Console, "console", "run"},
}

const (
	binDir     = "/usr/local/bin/"
	configPath = "/etc/pagewatch/pagewatch.yaml"
)

// unitFile is a unit's settings: section, then key, then every value in
// order (keys like LoadCredential= repeat).
type unitFile map[string]map[string][]string

func (u unitFile) get(sec, key string) string {
	v := u[sec][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func parseUnit(t *testing.T, file string) unitFile {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, sec, cont := unitFile{}, "", ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := cont + strings.TrimSpace(sc.Text())
		if cont = ""; strings.HasSuffix(line, `\`) {
			cont = strings.TrimSuffix(line, `\`) + " "
			continue
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			sec = line[1 : len(line)-1]
			u[sec] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || sec == "" {
				t.Fatalf("%s:%d: not key=value in a section: %q", file, n, line)
			}
			u[sec][strings.TrimSpace(k)] = append(u[sec][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

// systemdDuration parses "30", "30s", "1min 30s"; bare numbers are seconds.
func systemdDuration(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	r := strings.NewReplacer("min", "m", "sec", "s", " ", "")
	return time.ParseDuration(r.Replace(s))
}

func loadUnits(t *testing.T) map[string]unitFile {
	files, _ := filepath.Glob("*.service")
	out := map[string]unitFile{}
	for _, f := range files {
		if _, ok := units[f]; !ok {
			t.Errorf("%s: not one of the units this test knows; add it to units", f)
			continue
		}
		out[f] = parseUnit(t, f)
	}
	if len(out) != len(units) {
		t.Fatalf("found %d of the %d units", len(out), len(units))
	}
	return out
}

func TestUnits(t *testing.T) {
	for name, u := range loadUnits(t) {
		want := units[name]
		file, _, _ := unitConfig(t, name, u)
		cfg, err := config.Load(file)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		argv := strings.Fields(u.get("Service", "ExecStart"))
		if len(argv) == 0 || argv[0] != binDir+want.bin {
			t.Errorf("%s: ExecStart %q: want %s%s", name, argv, binDir, want.bin)
		}
		if cmd, cfgFile := commandOf(argv); cmd != want.cmd || cfgFile != configPath {
			t.Errorf("%s: ExecStart %q runs command %q with --config %q, want %q with %s", name, argv, cmd, cfgFile, want.cmd, configPath)
		}
		checks := map[string]*regexp.Regexp{
			"Type":            regexp.MustCompile(`^(exec|simple)$`),
			"ExecReload":      regexp.MustCompile(`^/bin/kill -(HUP|s HUP) \$MAINPID$`),
			"KillSignal":      regexp.MustCompile(`^SIGTERM$`),
			"Restart":         regexp.MustCompile(`^on-failure$`),
			"DynamicUser":     regexp.MustCompile(`^yes$`),
			"ProtectSystem":   regexp.MustCompile(`^strict$`),
			"ProtectHome":     regexp.MustCompile(`^(yes|read-only|tmpfs)$`),
			"PrivateTmp":      regexp.MustCompile(`^yes$`),
			"NoNewPrivileges": regexp.MustCompile(`^yes$`),
		}
		for key, re := range checks {
			if v := u.get("Service", key); !re.MatchString(v) {
				t.Errorf("%s: %s=%s, want %s", name, key, v, re)
			}
		}
		// Exit 2 is a bad config or flag: restarting cannot fix it.
		if !slices.Contains(strings.Fields(strings.Join(u["Service"]["RestartPreventExitStatus"], " ")), "2") {
			t.Errorf("%s: want RestartPreventExitStatus=2: the daemons exit 2 on a bad config or flag, which restarting every RestartSec cannot fix", name)
		}
		stop, err := systemdDuration(u.get("Service", "TimeoutStopSec"))
		if err != nil || stop <= cfg.ShutdownTimeout {
			t.Errorf("%s: TimeoutStopSec=%s must exceed shutdown_timeout (%s), or systemd kills a draining daemon", name, u.get("Service", "TimeoutStopSec"), cfg.ShutdownTimeout)
		}
		groups := strings.Fields(strings.Join(u["Service"]["SupplementaryGroups"], " "))
		if want.part == config.IngestTail && !slices.Contains(groups, "adm") {
			t.Errorf("%s: SupplementaryGroups=adm needed to read nginx's logs (www-data:adm 0640)", name)
		}
		// A daemon writes no file, except the worker's .eml files with
		// mail.transport: file.
		rw := u["Service"]["ReadWritePaths"]
		if want.part == config.Worker && cfg.Mail.Transport == "file" {
			if !slices.Contains(rw, cfg.Mail.File.Dir) && u.get("Service", "StateDirectory") == "" {
				t.Errorf("%s: mail.transport file writes %s: give it ReadWritePaths= or StateDirectory=", name, cfg.Mail.File.Dir)
			}
		} else if len(rw) > 0 {
			t.Errorf("%s: ReadWritePaths=%v, but the daemon writes no file", name, rw)
		}
		// Without "-", a unit whose credentials were all dropped (NATS
		// without auth, for the tailer) would fail to mount the missing %d.
		for _, b := range u["Service"]["BindReadOnlyPaths"] {
			for _, m := range strings.Fields(b) {
				if strings.HasPrefix(m, "%d:") {
					t.Errorf("%s: BindReadOnlyPaths=%s: write -%s, or the unit fails to start once it has no credential", name, m, m)
				}
			}
		}
		if u.get("Install", "WantedBy") == "" {
			t.Errorf("%s: no [Install] WantedBy=", name)
		}
	}
}

// commandOf finds the command name and --config value in a daemon's argv.
func commandOf(argv []string) (cmd, cfg string) {
	for i := 1; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "--config" || a == "-config":
			if i++; i < len(argv) {
				cfg = argv[i]
			}
		case strings.HasPrefix(a, "--config="):
			cfg = strings.TrimPrefix(a, "--config=")
		case !strings.HasPrefix(a, "-") && cmd == "":
			cmd = a
		}
	}
	return cmd, cfg
}

// credentialPaths maps where a unit's process finds each credential it
// loads: BindReadOnlyPaths=%d:DIR shows %d (the unit's own credentials
// directory, whose path has the unit's name) at DIR.
func credentialPaths(t *testing.T, name string, u unitFile) map[string]string {
	var dirs []string
	for _, b := range u["Service"]["BindReadOnlyPaths"] {
		for _, m := range strings.Fields(b) {
			if src, dst, ok := strings.Cut(strings.TrimPrefix(m, "-"), ":"); ok && src == "%d" {
				dst, _, _ = strings.Cut(dst, ":")
				dirs = append(dirs, dst)
			}
		}
	}
	dirs = append(dirs, "/run/credentials/"+name)
	out := map[string]string{}
	for _, lc := range u["Service"]["LoadCredential"] {
		id, src, ok := strings.Cut(lc, ":")
		if !ok || !path.IsAbs(src) {
			t.Errorf("%s: LoadCredential=%s: want ID:/absolute/path", name, lc)
			continue
		}
		for _, d := range dirs {
			out[path.Join(d, id)] = id
		}
	}
	return out
}

// fileRefs finds what a config makes a daemon read from files at start:
// {file: P} secrets and *_file keys (nats.creds_file, tls.ca_file...).
func fileRefs(n *yaml.Node, key string, out map[string]*yaml.Node) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for i, c := range n.Content {
			k := key
			if n.Kind == yaml.SequenceNode {
				k = fmt.Sprintf("%s[%d]", key, i)
			}
			fileRefs(c, k, out)
		}
	case yaml.MappingNode:
		if len(n.Content) == 2 && n.Content[0].Value == "file" && n.Content[1].Kind == yaml.ScalarNode {
			out[key] = n.Content[1]
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			if key != "" {
				k = key + "." + k
			}
			if strings.HasSuffix(k, "_file") && v.Kind == yaml.ScalarNode && v.Value != "" {
				out[k] = v
				continue
			}
			fileRefs(v, k, out)
		}
	}
}

// inPart reports whether a dotted config key is one the part reads; a
// secret under any other key fails only other daemons when unreadable.
func inPart(part config.Part, key string) bool {
	return slices.ContainsFunc(part.Sections(), func(s string) bool {
		return key == s || strings.HasPrefix(key, s+".") || strings.HasPrefix(key, s+"[")
	})
}

// unitConfig writes pagewatch.yaml as the unit sees it: every file it
// names that is a credential of the unit is copied (with placeholder
// content, long enough for a session key) under a temp root and the path rewritten to it; any other file
// stays missing there, an error only if the unit's own daemon reads it.
// It returns the rewritten file, the credentials the unit's daemon reads,
// and the keys of other daemons' secrets the unit cannot read.
func unitConfig(t *testing.T, name string, u unitFile) (file string, used map[string]bool, missing []string) {
	data, err := os.ReadFile("pagewatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("pagewatch.yaml: %v", err)
	}
	refs := map[string]*yaml.Node{}
	fileRefs(&doc, "", refs)
	creds := credentialPaths(t, name, u)
	used = map[string]bool{}
	fakeRoot := t.TempDir()
	for _, key := range slices.Sorted(maps.Keys(refs)) {
		n := refs[key]
		id, ok := creds[n.Value]
		own := inPart(units[name].part, key)
		if !ok {
			if own {
				t.Errorf("%s: pagewatch.yaml %s reads %s, which is none of the unit's credentials (%v)", name, key, n.Value, creds)
			} else {
				missing = append(missing, key)
			}
			n.Value = filepath.Join(fakeRoot, n.Value)
			continue
		}
		used[id] = used[id] || own
		dst := filepath.Join(fakeRoot, n.Value)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte("placeholder-"+id+"-0123456789abcdef0123456789abcdef\n"), 0o400); err != nil {
			t.Fatal(err)
		}
		n.Value = dst
	}
	// The rules directory is the repository's example.
	for i := 0; doc.Content != nil && i+1 < len(doc.Content[0].Content); i += 2 {
		if doc.Content[0].Content[i].Value == "sweeper" {
			sw := doc.Content[0].Content[i+1]
			for j := 0; j+1 < len(sw.Content); j += 2 {
				if sw.Content[j].Value == "rules_path" {
					abs, _ := filepath.Abs("rules")
					sw.Content[j+1].Value = abs
				}
			}
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(fakeRoot, "pagewatch.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, used, missing
}

// TestUnitConfig loads pagewatch.yaml as each unit sees it and validates
// it for the unit's daemon, which must not need the other daemons'
// secrets; and a unit loads only the credentials its daemon reads.
func TestUnitConfig(t *testing.T) {
	us := loadUnits(t)
	t.Logf("%d units", len(us))
	for _, name := range slices.Sorted(maps.Keys(us)) {
		u, part := us[name], units[name].part
		file, used, missing := unitConfig(t, name, u)
		cfg, err := config.Load(file)
		if err == nil {
			err = cfg.Validate(part)
		}
		if err != nil {
			t.Errorf("%s: deploy/systemd/pagewatch.yaml as the unit sees it (without %v): %v", name, missing, err)
		}
		// On a shared host any local user reaches a loopback port: the
		// console asks for a login there too.
		if part == config.Console && err == nil && (cfg.Console.Auth != "password" || len(cfg.Console.Users)+len(cfg.Console.Tokens) == 0 || !cfg.Console.SessionKey.IsSet()) {
			t.Errorf("%s: console.auth %q with %d users, %d tokens, session_key set %v: want password, a user or token, and a session_key", name, cfg.Console.Auth, len(cfg.Console.Users), len(cfg.Console.Tokens), cfg.Console.SessionKey.IsSet())
		}
		var ids []string
		for _, lc := range u["Service"]["LoadCredential"] {
			id, _, _ := strings.Cut(lc, ":")
			ids = append(ids, id)
			if !used[id] {
				t.Errorf("%s: LoadCredential=%s, which `%s` does not read in pagewatch.yaml: load it only in the units that use it", name, lc, part)
			}
		}
		t.Logf("%s: credentials %v; valid for `%s` without %v", name, ids, part, missing)
	}
}

var (
	buildOnce sync.Once
	builtDir  string
	buildErr  error
)

// binaries builds the three daemons once for the tests that run them.
func binaries(t *testing.T) string {
	buildOnce.Do(func() {
		builtDir, buildErr = os.MkdirTemp("", "pagewatch-systemd-test-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", builtDir+"/", "./cmd/...")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/...: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// TestExecStart runs each unit's ExecStart with --check-config: the real
// binary must accept the command line and the config as the unit sees it.
// The sweeper also checks the example rules in rules/. With an invalid
// config, the daemon must exit 2, which the unit does not restart.
func TestExecStart(t *testing.T) {
	bin := binaries(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("no_such_key: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, u := range loadUnits(t) {
		file, _, _ := unitConfig(t, name, u)
		argv := strings.Fields(strings.ReplaceAll(u.get("Service", "ExecStart"), configPath, file))
		run := func(args ...string) {
			c := exec.Command(filepath.Join(bin, path.Base(argv[0])), args...)
			c.Env = append(os.Environ(), "PAGEWATCH_CONFIG=")
			if out, err := c.CombinedOutput(); err != nil {
				t.Errorf("%s: %s %s: %v\n%s", name, path.Base(argv[0]), strings.Join(args, " "), err, out)
			}
		}
		run(append(argv[1:], "--check-config")...)
		if units[name].part == config.Sweeper {
			run("--config", file, "check")
		}
		// RestartPreventExitStatus=2 relies on a bad config exiting 2.
		c := exec.Command(filepath.Join(bin, path.Base(argv[0])), strings.Fields(strings.ReplaceAll(u.get("Service", "ExecStart"), configPath, bad))[1:]...)
		c.Env = append(os.Environ(), "PAGEWATCH_CONFIG=")
		if out, err := c.CombinedOutput(); c.ProcessState == nil || c.ProcessState.ExitCode() != 2 {
			t.Errorf("%s: ExecStart with a config holding an unknown key: %v, want exit status 2 (RestartPreventExitStatus=2)\n%s", name, err, out)
		}
	}
}

// tool finds a program in PATH or the sbin directories a non-root PATH
// lacks; a missing tool fails in CI and skips elsewhere.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	return testcheck.RequireTool(t, name, "apt-get install "+pkg+" (make test-deps does)")
}

// TestSystemdAnalyze runs `systemd-analyze verify` on copies of the units
// whose ExecStart names the binaries built here (verify insists the
// executable exists); any warning fails. `systemd-analyze security` must
// rate every unit's exposure at most 2.0 ("OK").
func TestSystemdAnalyze(t *testing.T) {
	sa := tool(t, "systemd-analyze", "systemd")
	bin := binaries(t)
	dir := t.TempDir()
	var files []string
	for name := range loadUnits(t) {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(strings.ReplaceAll(string(data), binDir, bin+"/")), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	slices.Sort(files)
	out, err := exec.Command(sa, append([]string{"verify", "--man=no"}, files...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify (exit: %v) reported:\n%s", err, out)
	}
	exposure := regexp.MustCompile(`Overall exposure level for (\S+): ([0-9.]+)`)
	for _, f := range files {
		out, err := exec.Command(sa, "security", "--offline=yes", "--no-pager", f).CombinedOutput()
		m := exposure.FindSubmatch(out)
		if m == nil {
			t.Errorf("systemd-analyze security %s: %v\n%s", filepath.Base(f), err, out)
			continue
		}
		if level, _ := strconv.ParseFloat(string(m[2]), 64); level > 2.0 {
			t.Errorf("%s: exposure %s, want at most 2.0; see `systemd-analyze security --offline=yes %s`", m[1], m[2], filepath.Base(f))
		} else {
			t.Logf("%s: exposure %s", m[1], m[2])
		}
	}
}
