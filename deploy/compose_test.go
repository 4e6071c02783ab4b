package deploy_test

// Checks deploy/docker-compose.yml, the files it mounts, deploy/Dockerfile
// and .dockerignore without a Docker engine (CI has none): the compose file
// is loaded and schema-validated by compose-go, the loader docker compose
// itself uses; the pagewatch config each service mounts is loaded as that
// service would see it; and the Dockerfile's go build line is run, then
// every service's command is run with --check-config.

import (
	"bufio"
	"context"
	"debug/elf"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/config"
)

const composeFile = "docker-compose.yml"

var root = func() string { r, _ := filepath.Abs(".."); return r }()

// replicas is what each scaled service must run: two loaders share the
// load, two sweepers give a standby leader, two workers share the queue.
var replicas = map[string]int{"ingest-load": 2, "sweeper": 2, "worker": 2}

func loadProject(t *testing.T) *types.Project {
	t.Helper()
	wd, _ := filepath.Abs(".")
	p, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  wd,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(wd, composeFile)}},
		Environment: types.Mapping{}, // nothing may come from the tester's shell
	}, func(o *loader.Options) { o.SetProjectName("pagewatch", true) })
	if err != nil {
		t.Fatalf("deploy/%s: %v", composeFile, err)
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
	if len(out) != 4 {
		t.Fatalf("deploy/%s: want 4 pagewatch services (ingest tail, ingest load, sweeper, worker), found %d", composeFile, len(out))
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
	}
	return "", fmt.Errorf("not a pagewatch daemon (ingest tail|load, sweeper run, worker run)")
}

func listenOf(cfg config.Config, part config.Part) string {
	switch part {
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
// daemon the service runs; then checks it against the compose file.
func TestComposeConfig(t *testing.T) {
	p := loadProject(t)
	loaded := 0
	defer func() { t.Logf("config loaded and valid for %d services", loaded) }()
	for _, d := range daemons(t, p) {
		cfg, refs := serviceConfig(t, p, d)
		if cfg == nil {
			continue
		}
		loaded++
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
			ref, ok := refs["clickhouse.password"]
			pwFile := ch.Environment["CLICKHOUSE_PASSWORD_FILE"]
			if !ok || ref.kind != "file" || pwFile == nil || secretAt(ch, *pwFile) != secretAt(d.svc, ref.value) || secretAt(ch, *pwFile) == "" {
				t.Errorf("service %s: clickhouse.password must be {file: ...} of the secret the clickhouse service reads via CLICKHOUSE_PASSWORD_FILE", d.name)
			}
		}
	}
}

// secretAt names the compose secret a service sees at path p, or "".
func secretAt(s types.ServiceConfig, p string) string {
	for _, sec := range s.Secrets {
		target := sec.Target
		if target == "" {
			target = "/run/secrets/" + sec.Source
		} else if !path.IsAbs(target) {
			target = "/run/secrets/" + target
		}
		if target == p {
			return sec.Source
		}
	}
	return ""
}

// configMount finds the config file a service reads and its host copy.
func configMount(s types.ServiceConfig) (string, bool) {
	target := ""
	if v := s.Environment["PAGEWATCH_CONFIG"]; v != nil {
		target = *v
	}
	for i, a := range s.Command {
		if a == "--config" && i+1 < len(s.Command) {
			target = s.Command[i+1]
		} else if v, ok := strings.CutPrefix(a, "--config="); ok {
			target = v
		}
	}
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			return v.Source, true
		}
	}
	return "", false
}

// secretRef is a {env: NAME} or {file: PATH} value in a config file, or a
// *_file key's path (nats.creds_file, tls.ca_file...): what the config
// makes a daemon read at start besides the config itself.
type secretRef struct{ kind, value string }

// findRefs records every such reference by its dotted key and returns the
// nodes holding file paths, for rewriting.
func findRefs(n *yaml.Node, key string, refs map[string]secretRef, files map[string]*yaml.Node) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			findRefs(c, key, refs, files)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			findRefs(c, fmt.Sprintf("%s[%d]", key, i), refs, files)
		}
	case yaml.MappingNode:
		if len(n.Content) == 2 && n.Content[1].Kind == yaml.ScalarNode && (n.Content[0].Value == "env" || n.Content[0].Value == "file") {
			refs[key] = secretRef{n.Content[0].Value, n.Content[1].Value}
			if n.Content[0].Value == "file" {
				files[key] = n.Content[1]
			}
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			if key != "" {
				k = key + "." + k
			}
			if strings.HasSuffix(k, "_file") && v.Kind == yaml.ScalarNode && v.Value != "" {
				refs[k], files[k] = secretRef{"path", v.Value}, v
				continue
			}
			findRefs(v, k, refs, files)
		}
	}
}

// hostFile is the repository file a service sees at a container path:
// a compose secret, or a file under a bind mount.
func hostFile(p *types.Project, s types.ServiceConfig, cpath string) (string, bool) {
	if sec, ok := p.Secrets[secretAt(s, cpath)]; ok {
		return sec.File, true
	}
	for _, v := range s.Volumes {
		if r, err := filepath.Rel(v.Target, cpath); v.Type == types.VolumeTypeBind && err == nil && !strings.HasPrefix(r, "..") {
			return filepath.Join(v.Source, r), true
		}
	}
	return "", false
}

// serviceConfig loads the config a service mounts as that service sees
// it, and validates it for the service's daemon.
func serviceConfig(t *testing.T, p *types.Project, d daemon) (*config.Config, map[string]secretRef) {
	t.Helper()
	file, refs := rewriteConfig(t, p, d)
	if file == "" {
		return nil, nil
	}
	cfg, err := config.Load(file)
	if err == nil {
		err = cfg.Validate(d.part)
	}
	if err != nil {
		hint := ""
		if len(refs) > 0 && strings.Contains(err.Error(), "password") {
			hint = "\n(the file uses {env: X}/{file: P} secrets: does config.Load support them yet?)"
		}
		src, _ := configMount(d.svc)
		t.Errorf("service %s: %s as `%s` sees it: %v%s", d.name, rel(src), d.part, err, hint)
		return nil, refs
	}
	return &cfg, refs
}

// rewriteConfig copies the config a service mounts so that it loads here
// as in the container: a file it names is copied under a temp root from
// the service's secrets and bind mounts (one they do not provide stays
// missing) and {env: X} reads the service's environment.
func rewriteConfig(t *testing.T, p *types.Project, d daemon) (string, map[string]secretRef) {
	t.Helper()
	src, ok := configMount(d.svc)
	if !ok {
		t.Errorf("service %s: no bind mount for the config file (PAGEWATCH_CONFIG or --config)", d.name)
		return "", nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", rel(src), err)
	}
	refs, files := map[string]secretRef{}, map[string]*yaml.Node{}
	findRefs(&doc, "", refs, files)
	fakeRoot := t.TempDir()
	for key, n := range files {
		if src, ok := hostFile(p, d.svc, n.Value); ok {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatalf("service %s: config %s: %v", d.name, key, err)
			}
			dst := filepath.Join(fakeRoot, n.Value)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o600); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Errorf("service %s: config %s reads %s, which no secret or bind mount of the service provides", d.name, key, n.Value)
		}
		n.Value = filepath.Join(fakeRoot, n.Value)
	}
	for key, r := range refs {
		if r.kind != "env" {
			continue
		}
		t.Setenv(r.value, "")
		if v := d.svc.Environment[r.value]; v != nil {
			t.Setenv(r.value, *v)
		} else {
			os.Unsetenv(r.value)
			t.Errorf("service %s: config %s reads $%s, which the service's environment lacks", d.name, key, r.value)
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(fakeRoot, "pagewatch.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, refs
}

func rel(p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
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

// dockerfile is deploy/Dockerfile's instructions, continuation lines joined.
func dockerfile(t *testing.T) [][2]string {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	joined := regexp.MustCompile(`\\\n(\s*#.*\n)*`).ReplaceAllString(string(data), " ")
	for _, line := range strings.Split(joined, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, args, _ := strings.Cut(line, " ")
		out = append(out, [2]string{strings.ToUpper(instr), strings.TrimSpace(args)})
	}
	return out
}

var buildRE = regexp.MustCompile(`go build (.*)`)

func TestDockerfile(t *testing.T) {
	var stages, users []string
	var build, expose, entrypoint string
	for _, in := range dockerfile(t) {
		switch in[0] {
		case "FROM":
			stages = append(stages, in[1])
			users = append(users, "")
		case "USER":
			users[len(users)-1] = in[1]
		case "RUN":
			if m := buildRE.FindStringSubmatch(in[1]); m != nil {
				build = in[1]
			}
		case "EXPOSE":
			expose += " " + in[1]
		case "ENTRYPOINT":
			entrypoint = in[1]
		}
	}
	// The builder's Go is go.mod's minor version: the golang images set
	// GOTOOLCHAIN=local, so an older one refuses to build.
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	goVer := "(go.mod has no go line)"
	if m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod); m != nil {
		goVer = string(m[1])
	}
	if len(stages) < 2 || !strings.Contains(stages[0], "golang:"+goVer) || !strings.Contains(stages[0], " AS ") {
		t.Errorf("stages %q: want a golang:%s builder stage (go.mod's Go) and a final stage", stages, goVer)
	}
	final := users[len(users)-1]
	if uid, _, _ := strings.Cut(final, ":"); !regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(uid) {
		t.Errorf("final stage USER %q: want a numeric non-root uid (Kubernetes runAsNonRoot checks it)", final)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`, "./cmd/ingest", "./cmd/sweeper", "./cmd/worker", "--mount=type=cache,target=/go/pkg/mod"} {
		if !strings.Contains(build, want) {
			t.Errorf("go build step %q lacks %s", build, want)
		}
	}
	for _, port := range []string{"9101", "9102", "9103", "9104"} {
		if !slices.Contains(strings.Fields(expose), port) {
			t.Errorf("EXPOSE%s lacks %s", expose, port)
		}
	}
	if regexp.MustCompile(`ingest|sweeper|worker`).MatchString(entrypoint) {
		t.Errorf("ENTRYPOINT %s fixes one daemon; compose and Kubernetes pick the command", entrypoint)
	}
}

// TestDockerBuild runs the Dockerfile's go build line as the builder stage
// would, checks the binaries are static, then runs every compose service's
// command with --check-config against the config it mounts.
func TestDockerBuild(t *testing.T) {
	var line string
	for _, in := range dockerfile(t) {
		if m := buildRE.FindStringSubmatch(in[1]); in[0] == "RUN" && m != nil {
			line = m[1]
		}
	}
	out := t.TempDir()
	// The Dockerfile's arguments, minus -o (ours is a temp dir); the quoted
	// -ldflags value stays one argument.
	args := []string{"build"}
	for _, m := range regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(line, -1) {
		args = append(args, strings.Trim(m, `"`))
	}
	if i := slices.Index(args, "-o"); i > 0 {
		args = slices.Delete(args, i, i+2)
	}
	args = slices.Insert(args, 1, "-o", out+"/")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	for _, bin := range []string{"ingest", "sweeper", "worker"} {
		f, err := elf.Open(filepath.Join(out, bin))
		if err != nil {
			t.Fatal(err)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked: it would not run on every base image", bin)
			}
		}
		f.Close()
	}
	p := loadProject(t)
	for _, d := range daemons(t, p) {
		cfgFile, _ := rewriteConfig(t, p, d)
		if cfgFile == "" {
			continue
		}
		argv := slices.Clone([]string(d.svc.Command))
		c := exec.Command(filepath.Join(out, argv[0]), append(argv[1:], "--check-config")...)
		c.Env = append(os.Environ(), "PAGEWATCH_CONFIG="+cfgFile)
		if b, err := c.CombinedOutput(); err != nil {
			t.Errorf("service %s: %s --check-config: %v\n%s", d.name, strings.Join(argv, " "), err, b)
		}
	}
}

// TestDockerignore: no pattern hides a file the image build needs.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	// Each file of the module's packages the daemons import, embedded
	// files included, relative to the repository root.
	cmd := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}
{{end}}{{end}}{{end}}`, "./cmd/ingest", "./cmd/sweeper", "./cmd/worker")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	needed := []string{"go.mod", "go.sum"}
	for _, f := range strings.Fields(string(out)) {
		r, _ := filepath.Rel(root, f)
		needed = append(needed, filepath.ToSlash(r))
	}
	for _, f := range needed {
		if ignored(patterns, f) {
			t.Errorf(".dockerignore excludes %s, which the image build needs", f)
		}
	}
	t.Logf("%d files the build needs, none excluded by %d patterns", len(needed), len(patterns))
}

// ignored applies .dockerignore rules: the last matching pattern wins, "!"
// re-includes, "**" spans directories, and a pattern matching a directory
// matches everything under it.
func ignored(patterns []string, file string) bool {
	parts := strings.Split(file, "/")
	out := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		segs := strings.Split(strings.Trim(path.Clean(strings.TrimPrefix(p, "!")), "/"), "/")
		for n := 1; n <= len(parts); n++ {
			if matchSegs(segs, parts[:n]) {
				out = !neg
				break
			}
		}
	}
	return out
}

func matchSegs(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(name); i++ {
			if matchSegs(pat[1:], name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	ok, _ := path.Match(pat[0], name[0])
	return ok && matchSegs(pat[1:], name[1:])
}
