package deploy_test

// Checks deploy/docker-compose.yml and the files it mounts without a
// Docker engine (CI has none): the compose file is loaded and
// schema-validated by compose-go, the loader docker compose itself uses;
// each daemon's service gets only the secrets its daemon uses; and the
// pagewatch config each service mounts is loaded and validated as that
// service sees it (serviceconfig_test.go). dockerfile_test.go runs the
// image's build and every service's command.

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/pagewatch/pagewatch/config"
)

const composeFile = "docker-compose.yml"

var root = func() string { r, _ := filepath.Abs(".."); return r }()

// replicas is what each scaled service must run: two loaders share the
// load, two sweepers give a standby leader, two workers share the queue.
var replicas = map[string]int{"ingest-load": 2, "sweeper": 2, "worker": 2}

func loadProject(t *testing.T) *types.Project {
	t.Helper()
	return loadProjectFile(t, composeFile, "pagewatch")
}

// loadProjectFile loads a compose file under deploy/ as docker compose
// would, relative paths from the file's directory.
func loadProjectFile(t *testing.T, file, name string) *types.Project {
	t.Helper()
	path, _ := filepath.Abs(file)
	p, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path}},
		Environment: types.Mapping{}, // nothing may come from the tester's shell
	}, func(o *loader.Options) { o.SetProjectName(name, true) })
	if err != nil {
		t.Fatalf("deploy/%s: %v", file, err)
	}
	return p
}

// daemon is a pagewatch service: built from deploy/Dockerfile.
type daemon struct {
	name string
	svc  types.ServiceConfig
	part config.Part
}

func daemons(t *testing.T, p *types.Project) []daemon {
	t.Helper()
	var out []daemon
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := p.Services[name]
		if s.Build == nil || s.Build.Dockerfile != "deploy/Dockerfile" {
			continue
		}
		part, err := partOf(s.Command)
		if err != nil {
			t.Errorf("service %s: command %q: %v", name, s.Command, err)
			continue
		}
		out = append(out, daemon{name, s, part})
	}
	if len(out) != 5 {
		t.Fatalf("deploy/%s: want 5 pagewatch services (ingest tail, ingest load, sweeper, worker, console), found %d", composeFile, len(out))
	}
	return out
}

// partOf reads a command line the way internal/daemon does: the program,
// then flags and the command name in any order.
func partOf(argv []string) (config.Part, error) {
	if len(argv) == 0 {
		return "", fmt.Errorf("empty: the image has no default daemon")
	}
	sub := ""
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") {
			sub = a
			break
		}
	}
	switch path.Base(argv[0]) + " " + sub {
	case "ingest tail":
		return config.IngestTail, nil
	case "ingest load":
		return config.IngestLoad, nil
	case "sweeper run", "sweeper ":
		return config.Sweeper, nil
	case "worker run", "worker ":
		return config.Worker, nil
	case "console run", "console ":
		return config.Console, nil
	}
	return "", fmt.Errorf("not a pagewatch daemon (ingest tail|load, sweeper run, worker run, console run)")
}

// listenOf is the daemon's admin listener (/metrics, /healthz, /readyz):
// for the console, console.admin_listen, not its pages' console.listen.
func listenOf(cfg config.Config, part config.Part) string {
	switch part {
	case config.Console:
		return cfg.Console.AdminListen
	case config.IngestTail:
		return cfg.Ingest.Tail.Listen
	case config.IngestLoad:
		return cfg.Ingest.Load.Listen
	case config.Sweeper:
		return cfg.Sweeper.Listen
	}
	return cfg.Worker.Listen
}

func TestComposeServices(t *testing.T) {
	p := loadProject(t)
	for name, s := range p.Services {
		if s.Image == "" && s.Build == nil {
			t.Errorf("service %s: neither image nor build", name)
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("service %s: build: %v", name, err)
			}
		}
		for dep, d := range s.DependsOn {
			if d.Condition == types.ServiceConditionHealthy && p.Services[dep].HealthCheck == nil {
				t.Errorf("service %s: depends_on %s with service_healthy, but %s has no healthcheck", name, dep, dep)
			}
		}
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil || !strings.HasPrefix(v.Source, root+string(filepath.Separator)) {
					t.Errorf("service %s: bind mount %s -> %s: not a file of the repository (%v)", name, v.Source, v.Target, err)
				}
			}
		}
	}
	for name, sec := range p.Secrets {
		if _, err := os.Stat(sec.File); err != nil {
			t.Errorf("secret %s: %v", name, err)
		}
	}
	ds := daemons(t, p)
	for _, d := range ds {
		want := replicas[d.name]
		if want == 0 {
			want = 1
		}
		got := 1
		if d.svc.Deploy != nil && d.svc.Deploy.Replicas != nil {
			got = *d.svc.Deploy.Replicas
		}
		if got != want {
			t.Errorf("service %s: %d replicas, want %d", d.name, got, want)
		}
		needs := []string{"nats"}
		if d.part != config.IngestTail {
			needs = append(needs, "clickhouse")
		}
		for _, dep := range needs {
			if c := d.svc.DependsOn[dep].Condition; c != types.ServiceConditionHealthy {
				t.Errorf("service %s: depends_on %s: condition %q, want service_healthy", d.name, dep, c)
			}
		}
		if !d.svc.ReadOnly || !slices.Contains(d.svc.CapDrop, "ALL") {
			t.Errorf("service %s: want read_only: true and cap_drop: [ALL]", d.name)
		}
	}
	t.Logf("%d services, %d of them pagewatch daemons; %d bind-mounted or secret files", len(p.Services), len(ds), len(p.Secrets)+countBinds(p))
}

func countBinds(p *types.Project) int {
	n := 0
	for _, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				n++
			}
		}
	}
	return n
}

// TestComposeConfig loads, per service, the config it mounts with the
// secrets and environment that service gets, and validates it for the
// daemon the service runs (another daemon's secret it lacks must not fail
// it); then checks it against the compose file.
func TestComposeConfig(t *testing.T) {
	p := loadProject(t)
	loaded := 0
	defer func() { t.Logf("config loaded and valid for %d services", loaded) }()
	for _, d := range daemons(t, p) {
		cfg, v := serviceConfig(t, p, d)
		if cfg == nil {
			continue
		}
		loaded++
		t.Logf("service %s: valid for `%s`%s", d.name, d.part, v.without())
		listen := listenOf(*cfg, d.part)
		host, port, _ := strings.Cut(listen, ":")
		if host != "0.0.0.0" {
			t.Errorf("service %s: %s listens on %q; in a container it must be 0.0.0.0:PORT", d.name, d.part, listen)
		}
		if !slices.Contains(d.svc.Expose, port) {
			t.Errorf("service %s: expose %v lacks the admin port %s", d.name, d.svc.Expose, port)
		}
		if hc := d.svc.HealthCheck; hc == nil || !regexp.MustCompile(`127\.0\.0\.1:`+port+`/(readyz|healthz)\b`).MatchString(strings.Join(hc.Test, " ")) {
			t.Errorf("service %s: healthcheck must probe 127.0.0.1:%s/readyz or /healthz", d.name, port)
		}
		checkConsolePorts(t, d, *cfg)
		// The addresses the daemons dial are services of this file.
		dial := map[string]string{"nats.url": strings.TrimPrefix(cfg.NATS.URL, "nats://")}
		for i, a := range cfg.ClickHouse.Addr {
			dial[fmt.Sprintf("clickhouse.addr[%d]", i)] = a
		}
		if cfg.Mail.Transport == "smtp" {
			dial["mail.smtp.host"] = fmt.Sprintf("%s:%d", cfg.Mail.SMTP.Host, cfg.Mail.SMTP.Port)
		}
		for key, hp := range dial {
			h, _, _ := strings.Cut(hp, ":")
			if _, ok := p.Services[h]; !ok {
				t.Errorf("service %s: config %s = %q: no compose service %q", d.name, key, hp, h)
			}
		}
		// ClickHouse's user is the one its entrypoint creates, with the
		// password from the same secret.
		if d.part != config.IngestTail {
			ch := p.Services["clickhouse"]
			if u := ch.Environment["CLICKHOUSE_USER"]; u == nil || *u != cfg.ClickHouse.Username {
				t.Errorf("service %s: clickhouse.username %q, but the clickhouse service does not create that user (CLICKHOUSE_USER)", d.name, cfg.ClickHouse.Username)
			}
			ref, ok := v.refs["clickhouse.password"]
			pwFile := ch.Environment["CLICKHOUSE_PASSWORD_FILE"]
			if !ok || ref.kind != "file" || pwFile == nil || secretAt(ch, *pwFile) != secretAt(d.svc, ref.value) || secretAt(ch, *pwFile) == "" {
				t.Errorf("service %s: clickhouse.password must be {file: ...} of the secret the clickhouse service reads via CLICKHOUSE_PASSWORD_FILE", d.name)
			}
		}
	}
}

// TestComposeSecrets: a daemon's service gets only the secrets its daemon
// reads, the keys of its part (config.Part.Sections); TestComposeConfig
// shows that those are all it needs.
func TestComposeSecrets(t *testing.T) {
	p := loadProject(t)
	for _, d := range daemons(t, p) {
		v := rewriteConfig(t, p, d)
		if v.file == "" {
			continue
		}
		// What the daemon itself reads: compose secrets, container paths
		// and environment variables.
		usedSecret, usedPath, usedEnv := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for key, r := range v.refs {
			switch {
			case !inPart(d.part, key):
			case r.kind == "env":
				usedEnv[r.value] = true
			default:
				usedSecret[secretAt(d.svc, r.value)], usedPath[r.value] = true, true
			}
		}
		var got []string
		for _, sec := range d.svc.Secrets {
			got = append(got, sec.Source)
			if !usedSecret[sec.Source] {
				t.Errorf("service %s: secret %s, which `%s` does not read: give it only to the services that use it", d.name, sec.Source, d.part)
			}
		}
		for key, r := range v.refs {
			if inPart(d.part, key) || !secretKey(key, r) {
				continue
			}
			if r.kind == "env" && d.svc.Environment[r.value] != nil && !usedEnv[r.value] {
				t.Errorf("service %s: environment %s holds %s, which `%s` does not read", d.name, r.value, key, d.part)
			}
			// Compose secrets were reported above; this is a bind mount.
			if _, ok := hostFile(p, d.svc, r.value); r.kind != "env" && ok && !usedPath[r.value] && secretAt(d.svc, r.value) == "" {
				t.Errorf("service %s: sees %s (%s), which `%s` does not read", d.name, r.value, key, d.part)
			}
		}
		t.Logf("service %s (%s): secrets %v", d.name, d.part, got)
	}
}

// checkConsolePorts: a daemon publishes no port but the console's pages,
// on the host's loopback only; the console listens on 0.0.0.0 in its
// container, so it must ask for a login (auth: none is loopback only).
func checkConsolePorts(t *testing.T, d daemon, cfg config.Config) {
	t.Helper()
	published := 0
	for _, pp := range d.svc.Ports {
		if d.part != config.Console {
			t.Errorf("service %s: publishes port %s; only the console's pages are published", d.name, pp.Published)
			continue
		}
		_, port, _ := strings.Cut(cfg.Console.Listen, ":")
		if pp.HostIP != "127.0.0.1" {
			t.Errorf("service %s: publishes %s on %q; want the host's loopback only (127.0.0.1:PORT:PORT)", d.name, pp.Published, pp.HostIP)
		}
		if fmt.Sprint(pp.Target) != port {
			t.Errorf("service %s: publishes container port %d, but console.listen is %q", d.name, pp.Target, cfg.Console.Listen)
		}
		published++
	}
	if d.part != config.Console {
		return
	}
	host, port, _ := strings.Cut(cfg.Console.Listen, ":")
	if host != "0.0.0.0" {
		t.Errorf("service %s: console.listen %q; in a container it must be 0.0.0.0:PORT", d.name, cfg.Console.Listen)
	}
	if !slices.Contains(d.svc.Expose, port) {
		t.Errorf("service %s: expose %v lacks the console's port %s", d.name, d.svc.Expose, port)
	}
	if published != 1 {
		t.Errorf("service %s: %d published ports, want console.listen's on 127.0.0.1", d.name, published)
	}
	if cfg.Console.Auth != "password" || len(cfg.Console.Users)+len(cfg.Console.Tokens) == 0 {
		t.Errorf("service %s: console.auth %q with %d users and %d tokens; off loopback it must be password with a user or token", d.name, cfg.Console.Auth, len(cfg.Console.Users), len(cfg.Console.Tokens))
	}
	if !cfg.Console.SessionKey.IsSet() {
		t.Errorf("service %s: console.session_key unset: each replica and restart would make its own, logging everyone out", d.name)
	}
	checkCookieSecure(t, "service "+d.name, cfg)
}

// checkCookieSecure: the console's cookies are Secure, so a browser never
// sends them in clear: it is reached through a proxy that terminates TLS,
// or as http://localhost, which browsers count as secure.
func checkCookieSecure(t *testing.T, where string, cfg config.Config) {
	t.Helper()
	if cs := cfg.Console.CookieSecure; cs == nil || !*cs {
		t.Errorf("%s: console.cookie_secure is not true: the console serves plain HTTP here, so unset it leaves the cookies without Secure", where)
	}
}

// secretKey reports whether a reference holds a secret rather than, say,
// a CA bundle anyone may read.
func secretKey(key string, r secretRef) bool {
	return r.kind != "path" || strings.HasSuffix(key, "creds_file") || strings.HasSuffix(key, "seed_file") || strings.HasSuffix(key, "key_file")
}

// TestComposeLogVolume: nginx writes its access log to a real file on a
// volume that ingest-tail mounts read-only, where the config's inputs are.
func TestComposeLogVolume(t *testing.T) {
	p := loadProject(t)
	nginx, tail := p.Services["nginx"], p.Services["ingest-tail"]
	conf, ok := "", false
	for _, v := range nginx.Volumes {
		if v.Target == "/etc/nginx/nginx.conf" {
			conf, ok = v.Source, true
		}
	}
	if !ok {
		t.Fatal("service nginx: no bind mount of /etc/nginx/nginx.conf")
	}
	logs := accessLogs(t, conf)
	if len(logs) == 0 {
		t.Fatalf("%s: no access_log to a file", rel(conf))
	}
	var d daemon
	for _, x := range daemons(t, p) {
		if x.name == "ingest-tail" {
			d = x
		}
	}
	cfg, _ := serviceConfig(t, p, d)
	if cfg == nil {
		return
	}
	shared := 0
	for _, nv := range nginx.Volumes {
		for _, tv := range tail.Volumes {
			if nv.Type != types.VolumeTypeVolume || tv.Type != nv.Type || tv.Source != nv.Source {
				continue
			}
			shared++
			if !tv.ReadOnly {
				t.Errorf("service ingest-tail: volume %s must be mounted read-only", tv.Source)
			}
			for _, l := range logs {
				r, err := filepath.Rel(nv.Target, l)
				if err != nil || strings.HasPrefix(r, "..") {
					t.Errorf("%s: access_log %s is not on volume %s (%s)", rel(conf), l, nv.Source, nv.Target)
					continue
				}
				want := path.Join(tv.Target, r)
				found := false
				for _, in := range cfg.Ingest.Tail.Inputs {
					found = found || in.Path == want
				}
				if !found {
					t.Errorf("nginx logs to %s, which ingest-tail sees as %s; no ingest.tail.inputs path is that", l, want)
				}
			}
			for i, in := range cfg.Ingest.Tail.Inputs {
				if r, err := filepath.Rel(tv.Target, in.Path); err != nil || strings.HasPrefix(r, "..") {
					t.Errorf("ingest.tail.inputs[%d].path %s is outside the shared volume (%s)", i, in.Path, tv.Target)
				}
			}
		}
	}
	if shared == 0 {
		t.Error("services nginx and ingest-tail share no named volume")
	}
	t.Logf("access logs %v shared through %d volume(s)", logs, shared)
}

var accessLogRE = regexp.MustCompile(`^\s*access_log\s+(\S+)[^;]*;`)

// accessLogs lists nginx.conf's access_log files. The image's own
// /var/log/nginx/access.log is a symlink to /dev/stdout: no other container
// can read that.
func accessLogs(t *testing.T, conf string) []string {
	f, err := os.Open(conf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		m := accessLogRE.FindStringSubmatch(sc.Text())
		if m == nil || m[1] == "off" {
			continue
		}
		if !path.IsAbs(m[1]) || strings.HasPrefix(m[1], "/var/log/nginx/") || strings.HasPrefix(m[1], "/dev/") || strings.HasPrefix(m[1], "syslog:") {
			t.Errorf("%s:%d: access_log %s: want an absolute path on the shared volume", rel(conf), line, m[1])
			continue
		}
		out = append(out, m[1])
	}
	return out
}
