package kubernetes_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/pagewatch/pagewatch/config"
)

// daemon is a container running one of pagewatch's daemons.
type daemon struct {
	deploy *appsv1.Deployment
	c      corev1.Container
	part   config.Part
	config string // the --config path (or $PAGEWATCH_CONFIG)
	where  string
}

func daemons(t *testing.T, o objects) []daemon {
	t.Helper()
	var out []daemon
	seen := map[config.Part]bool{}
	for _, d := range o.deployments {
		for _, c := range allContainers(d.Spec.Template.Spec) {
			if c.Image != image {
				continue
			}
			x := daemon{deploy: d, c: c, where: fmt.Sprintf("Deployment %s, container %s", d.Name, c.Name), config: "/etc/pagewatch/pagewatch.yaml"}
			argv := append(append([]string{}, c.Command...), c.Args...)
			sub := ""
			for i := 1; i < len(argv); i++ {
				switch a := argv[i]; {
				case a == "--config" && i+1 < len(argv):
					i++
					x.config = argv[i]
				case strings.HasPrefix(a, "--config="):
					x.config = strings.TrimPrefix(a, "--config=")
				case !strings.HasPrefix(a, "-") && sub == "":
					sub = a
				}
			}
			prog := ""
			if len(argv) > 0 {
				prog = path.Base(argv[0])
			}
			switch prog + " " + sub {
			case "ingest tail":
				x.part = config.IngestTail
			case "ingest load":
				x.part = config.IngestLoad
			case "sweeper run", "sweeper ":
				x.part = config.Sweeper
			case "worker run", "worker ":
				x.part = config.Worker
			case "console run", "console ":
				x.part = config.Console
			default:
				t.Errorf("%s: command %q is none of ingest tail|load, sweeper run, worker run, console run", x.where, argv)
				continue
			}
			seen[x.part] = true
			out = append(out, x)
		}
	}
	if len(seen) != 5 {
		t.Fatalf("the manifests run %v; want all of ingest tail, ingest load, sweeper, worker and console", seen)
	}
	return out
}

// view is what a daemon container sees of its config and secrets.
type view struct {
	cfg     *config.Config    // loaded and valid for the daemon, or nil
	files   map[string]string // dotted key: the path a {file: P} or *_file names
	envs    map[string]string // dotted key: the variable an {env: X} names
	secrets map[string]string // path: "Secret S key K", every Secret file it sees
	missing []string          // keys of other daemons' secrets it cannot read
}

// containerConfig loads the config a daemon container mounts as that
// container sees it: its secret (only their items, if listed) and
// ConfigMap volumes are written under a temp root, and {env: X} reads its
// environment (a Secret's key or a value). A file or variable the daemon
// itself reads must be there; one only other daemons read may be missing.
// It validates the config for the container's daemon.
func containerConfig(t *testing.T, o objects, x daemon) view {
	t.Helper()
	vols := map[string]corev1.Volume{}
	for _, v := range x.deploy.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	root := t.TempDir()
	w := view{files: map[string]string{}, envs: map[string]string{}, secrets: map[string]string{}}
	var mounts []string // mountPaths of secret and ConfigMap volumes
	for _, m := range x.c.VolumeMounts {
		v := vols[m.Name]
		var data map[string]string
		switch {
		case v.Secret != nil && o.secrets[v.Secret.SecretName] != nil:
			data = map[string]string{}
			for k := range o.secretKeys(v.Secret.SecretName) {
				data[k], _ = o.secretValue(v.Secret.SecretName, k)
			}
			if len(v.Secret.Items) > 0 {
				// Only the listed keys, at their paths.
				picked := map[string]string{}
				for _, it := range v.Secret.Items {
					val, ok := data[it.Key]
					if !ok {
						t.Errorf("%s: volume %s: no key %s in Secret %s", x.where, m.Name, it.Key, v.Secret.SecretName)
					}
					picked[it.Path] = val
				}
				data = picked
			}
			for k := range data {
				w.secrets[path.Join(m.MountPath, k)] = fmt.Sprintf("Secret %s key %s", v.Secret.SecretName, k)
			}
			if mode := v.Secret.DefaultMode; mode != nil && *mode&0o004 == 0 && !(*mode&0o040 != 0 && fsGroup(x) != nil) && !(*mode&0o400 != 0 && runAsUser(x) == 0) {
				t.Errorf("%s: Secret volume %s (mode %#o) is not readable by the container's user", x.where, m.Name, *mode)
			}
		case v.ConfigMap != nil && o.configMaps[v.ConfigMap.Name] != nil:
			data = o.configMaps[v.ConfigMap.Name].Data
		default:
			continue
		}
		mounts = append(mounts, m.MountPath)
		for k, val := range data {
			dst := filepath.Join(root, m.MountPath, k)
			if m.SubPath != "" {
				if k != m.SubPath {
					continue
				}
				dst = filepath.Join(root, m.MountPath)
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, []byte(val), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(root, x.config))
	if err != nil {
		t.Errorf("%s: config %s: no ConfigMap mounted there with that key (%v)", x.where, x.config, err)
		return w
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %s: %v", x.where, x.config, err)
	}
	nodes := map[string]*yaml.Node{}
	refs(&doc, "", nodes, w.envs)
	lacks := func(key, msg string, args ...any) {
		if inPart(x.part, key) {
			t.Errorf("%s: config %s reads "+msg, append([]any{x.where, key}, args...)...)
		} else {
			w.missing = append(w.missing, key)
		}
	}
	for key, n := range nodes {
		w.files[key] = n.Value
		under := false
		for _, m := range mounts {
			under = under || strings.HasPrefix(n.Value, strings.TrimSuffix(m, "/")+"/")
		}
		if _, err := os.Stat(filepath.Join(root, n.Value)); !under || err != nil {
			lacks(key, "%s, which no mounted Secret or ConfigMap key provides", n.Value)
		}
		n.Value = filepath.Join(root, n.Value)
	}
	for key, name := range w.envs {
		val, ok := "", false
		for _, e := range x.c.Env {
			if e.Name != name {
				continue
			}
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
				val, ok = o.secretValue(r.SecretKeyRef.Name, r.SecretKeyRef.Key)
			} else if r == nil {
				val, ok = e.Value, true
			}
		}
		t.Setenv(name, val)
		if !ok {
			os.Unsetenv(name)
			lacks(key, "$%s, which the container's env lacks (or whose Secret key is missing)", name)
		}
	}
	slices.Sort(w.missing)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "rewritten.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err == nil {
		err = cfg.Validate(x.part)
	}
	if err != nil {
		t.Errorf("%s: %s as `%s` sees it (without %v): %v", x.where, x.config, x.part, w.missing, err)
		return w
	}
	w.cfg = &cfg
	return w
}

func fsGroup(x daemon) *int64 {
	if p := x.deploy.Spec.Template.Spec.SecurityContext; p != nil {
		return p.FSGroup
	}
	return nil
}

func runAsUser(x daemon) int64 {
	if sc := x.c.SecurityContext; sc != nil && sc.RunAsUser != nil {
		return *sc.RunAsUser
	}
	if p := x.deploy.Spec.Template.Spec.SecurityContext; p != nil && p.RunAsUser != nil {
		return *p.RunAsUser
	}
	return -1 // the image's USER, non-root (runAsNonRoot is checked)
}

// refs finds what a config reads at load besides itself: {file: P} secrets
// and *_file keys (nats.creds_file, tls.ca_file...) into files, {env: X}
// secrets into envs, by dotted key.
func refs(n *yaml.Node, key string, files map[string]*yaml.Node, envs map[string]string) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for i, c := range n.Content {
			k := key
			if n.Kind == yaml.SequenceNode {
				k = fmt.Sprintf("%s[%d]", key, i)
			}
			refs(c, k, files, envs)
		}
	case yaml.MappingNode:
		if len(n.Content) == 2 && n.Content[1].Kind == yaml.ScalarNode {
			switch n.Content[0].Value {
			case "file":
				files[key] = n.Content[1]
				return
			case "env":
				envs[key] = n.Content[1].Value
				return
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			if key != "" {
				k = key + "." + k
			}
			if strings.HasSuffix(k, "_file") && v.Kind == yaml.ScalarNode && v.Value != "" {
				files[k] = v
				continue
			}
			refs(v, k, files, envs)
		}
	}
}

// listenOf is the daemon's admin listener (/metrics, /healthz, /readyz),
// which the probes and Prometheus use: for the console that is
// console.admin_listen, not console.listen (its pages).
func listenOf(cfg *config.Config, p config.Part) string {
	switch p {
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

// probePort resolves a probe's port (a number or a container port name).
func probePort(c corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return -1
}

// TestDaemonConfig: the config loads in every daemon container, and the
// probes, ports, scrape annotations and grace period agree with it.
func TestDaemonConfig(t *testing.T) {
	o := load(t)
	ds := daemons(t, o)
	t.Logf("%d pagewatch containers", len(ds))
	for _, x := range ds {
		w := containerConfig(t, o, x)
		cfg := w.cfg
		if cfg == nil {
			continue
		}
		if x.part == config.Console {
			checkConsole(t, o, x, w)
		}
		// deploy/prometheus/alerts.yml keys on job="pagewatch-<daemon>",
		// which the PodMonitor in kustomization.yaml takes from the
		// container's name.
		if want := strings.ReplaceAll(string(x.part), " ", "-"); x.c.Name != want {
			t.Errorf("%s: name the container %q: the job label pagewatch-%s is made from it", x.where, want, want)
		}
		listen := listenOf(cfg, x.part)
		host, portS, _ := strings.Cut(listen, ":")
		port, _ := strconv.Atoi(portS)
		if host != "0.0.0.0" {
			t.Errorf("%s: %s listens on %q: probes and Prometheus need 0.0.0.0:PORT", x.where, x.part, listen)
		}
		probes := []struct {
			probe *corev1.Probe
			path  string
		}{{x.c.LivenessProbe, "/healthz"}, {x.c.ReadinessProbe, "/readyz"}}
		sidecar := false
		for _, c := range x.deploy.Spec.Template.Spec.Containers {
			sidecar = sidecar || c.Image != image
		}
		if sidecar {
			// A sidecar's readiness is its pod's: /readyz failing with NATS
			// would take the web server out of its Service.
			if x.c.ReadinessProbe != nil {
				t.Errorf("%s: a sidecar must have no readinessProbe: it would make the web server's pod unready whenever NATS is", x.where)
			}
			probes = probes[:1]
		}
		for _, p := range probes {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || probePort(x.c, p.probe.HTTPGet.Port) != int32(port) {
				t.Errorf("%s: want an HTTP probe of %s on the admin port %d", x.where, p.path, port)
			}
		}
		// /readyz waits up to 2s for its dependency checks; a probe that
		// gives up first (the default timeoutSeconds is 1) makes pods flap.
		if p := x.c.ReadinessProbe; p != nil && p.TimeoutSeconds < 3 {
			t.Errorf("%s: readinessProbe timeoutSeconds %d (0: the default, 1), want at least 3: /readyz may take 2s", x.where, p.TimeoutSeconds)
		}
		if p := x.c.LivenessProbe; p != nil && p.TimeoutSeconds < 2 {
			t.Errorf("%s: livenessProbe timeoutSeconds %d (0: the default, 1), want at least 2", x.where, p.TimeoutSeconds)
		}
		checkGOMEMLIMIT(t, x)
		ann := x.deploy.Spec.Template.Annotations
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != portS || ann["prometheus.io/path"] != "/metrics" {
			t.Errorf("%s: pod annotations prometheus.io/{scrape,port,path} = %q %q %q, want \"true\" %q /metrics",
				x.where, ann["prometheus.io/scrape"], ann["prometheus.io/port"], ann["prometheus.io/path"], portS)
		}
		grace := x.deploy.Spec.Template.Spec.TerminationGracePeriodSeconds
		if grace == nil || float64(*grace) <= cfg.ShutdownTimeout.Seconds() {
			t.Errorf("%s: terminationGracePeriodSeconds %s must exceed shutdown_timeout %s", x.where, ptr(grace), cfg.ShutdownTimeout)
		}
	}
}

// checkConsole: in a pod the console listens on 0.0.0.0 (the Service
// reaches the pod's IP), so it must ask for a login: auth password with a
// user or token, every token and the session key from a Secret (never a
// literal in the ConfigMap); its pages' port is a container port, apart
// from the admin port, and a Service sends to it.
func checkConsole(t *testing.T, o objects, x daemon, w view) {
	t.Helper()
	cc := w.cfg.Console
	host, portS, _ := strings.Cut(cc.Listen, ":")
	port, _ := strconv.Atoi(portS)
	if host != "0.0.0.0" {
		t.Errorf("%s: console.listen %q: the Service reaches the pod's IP; want 0.0.0.0:PORT", x.where, cc.Listen)
	}
	if cc.Auth != "password" || len(cc.Users)+len(cc.Tokens) == 0 {
		t.Errorf("%s: console.auth %q with %d users and %d tokens: off loopback it must be password, with a user or token", x.where, cc.Auth, len(cc.Users), len(cc.Tokens))
	}
	fromSecret := func(key string) bool {
		if p, ok := w.files[key]; ok {
			_, ok = w.secrets[p]
			return ok
		}
		if name, ok := w.envs[key]; ok {
			for _, e := range x.c.Env {
				if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					return true
				}
			}
		}
		return false
	}
	for i := range cc.Tokens {
		if key := fmt.Sprintf("console.tokens[%d].token", i); !fromSecret(key) {
			t.Errorf("%s: %s is not read from a Secret (a file of a Secret volume or an env from secretKeyRef); a literal would sit in the ConfigMap", x.where, key)
		}
	}
	if !cc.SessionKey.IsSet() || !fromSecret("console.session_key") {
		t.Errorf("%s: console.session_key must come from a Secret: unset, each replica makes its own and a login holds on one pod only", x.where)
	}
	checkCookieSecure(t, x.where, *w.cfg)
	var named string
	for _, cp := range x.c.Ports {
		if cp.ContainerPort == int32(port) {
			named = cp.Name
		}
	}
	if named == "" {
		t.Errorf("%s: no container port %d (console.listen)", x.where, port)
	}
	if listenOf(w.cfg, x.part) == cc.Listen {
		t.Errorf("%s: console.admin_listen is console.listen (%s): the probes and /metrics need their own port", x.where, cc.Listen)
	}
	served := false
	for _, s := range o.services {
		if !subset(s.Spec.Selector, x.deploy.Spec.Template.Labels) {
			continue
		}
		for _, sp := range s.Spec.Ports {
			tp := sp.TargetPort
			if tp.Type == intstr.Int && tp.IntVal == 0 {
				tp = intstr.FromInt32(sp.Port)
			}
			served = served || probePort(x.c, tp) == int32(port)
		}
	}
	if !served {
		t.Errorf("%s: no Service sends to the console's port %d", x.where, port)
	}
}

// checkCookieSecure: the console's cookies are Secure: the Ingress
// terminates TLS, so the console itself serves plain HTTP and cannot tell.
func checkCookieSecure(t *testing.T, where string, cfg config.Config) {
	t.Helper()
	if cs := cfg.Console.CookieSecure; cs == nil || !*cs {
		t.Errorf("%s: console.cookie_secure is not true: TLS ends at the Ingress, so unset it leaves the cookies without Secure", where)
	}
}

var accessLogRE = regexp.MustCompile(`(?m)^\s*access_log\s+([^\s;]+)`)

// TestSidecarLogs: the ingest tail sidecar shares an emptyDir with nginx,
// read-only, and nginx's access_log files fall under its inputs' globs.
func TestSidecarLogs(t *testing.T) {
	o := load(t)
	checked := 0
	for _, x := range daemons(t, o) {
		if x.part != config.IngestTail {
			continue
		}
		cfg := containerConfig(t, o, x).cfg
		if cfg == nil {
			continue
		}
		pod := x.deploy.Spec.Template.Spec
		vols := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			vols[v.Name] = v
		}
		for _, tm := range x.c.VolumeMounts {
			if vols[tm.Name].EmptyDir == nil {
				continue
			}
			if !tm.ReadOnly {
				t.Errorf("%s: the shared log volume %s must be mounted readOnly", x.where, tm.Name)
			}
			for i, in := range cfg.Ingest.Tail.Inputs {
				if !strings.HasPrefix(in.Path, tm.MountPath+"/") {
					t.Errorf("%s: ingest.tail.inputs[%d].path %s is not on the shared volume (%s)", x.where, i, in.Path, tm.MountPath)
				}
			}
			for _, c := range pod.Containers {
				conf := nginxConf(o, pod, c)
				if conf == "" {
					continue
				}
				for _, nm := range c.VolumeMounts {
					if nm.Name != tm.Name {
						continue
					}
					for _, m := range accessLogRE.FindAllStringSubmatch(conf, -1) {
						if m[1] == "off" {
							continue
						}
						// A variable in the path ($logdate) stands for any text.
						file := regexp.MustCompile(`\$\w+`).ReplaceAllString(m[1], "x")
						rel, err := filepath.Rel(nm.MountPath, file)
						if err != nil || strings.HasPrefix(rel, "..") {
							t.Errorf("container %s: access_log %s is not on the shared volume %s", c.Name, m[1], nm.MountPath)
							continue
						}
						seen, matched := path.Join(tm.MountPath, rel), false
						for _, in := range cfg.Ingest.Tail.Inputs {
							ok, _ := path.Match(in.Path, seen)
							matched = matched || ok
						}
						if !matched {
							t.Errorf("container %s logs to %s, seen by the sidecar as %s: no ingest.tail.inputs path matches", c.Name, m[1], seen)
						}
						checked++
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no nginx access_log shared with an ingest tail sidecar")
	}
}

// nginxConf is the nginx.conf a container mounts from a ConfigMap, or "".
func nginxConf(o objects, pod corev1.PodSpec, c corev1.Container) string {
	for _, m := range c.VolumeMounts {
		if m.MountPath != "/etc/nginx/nginx.conf" {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && o.configMaps[v.ConfigMap.Name] != nil {
				return o.configMaps[v.ConfigMap.Name].Data[m.SubPath]
			}
		}
	}
	return ""
}
