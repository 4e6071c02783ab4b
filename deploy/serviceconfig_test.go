package deploy_test

// The pagewatch config as one compose service sees it: the files its
// secrets and bind mounts provide and its environment, nothing else.

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/config"
)

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

// inPart reports whether a dotted config key is one the part reads; a
// secret under any other key fails only other daemons when unreadable.
func inPart(part config.Part, key string) bool {
	return slices.ContainsFunc(part.Sections(), func(s string) bool {
		return key == s || strings.HasPrefix(key, s+".") || strings.HasPrefix(key, s+"[")
	})
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

// view is the config a service mounts, rewritten to load here as there.
type view struct {
	file    string               // the rewritten copy
	refs    map[string]secretRef // by dotted key
	missing []string             // keys of other daemons' secrets the service cannot read
}

// without names, for messages, the secrets of other daemons the service
// cannot read.
func (v view) without() string {
	if len(v.missing) == 0 {
		return ""
	}
	return fmt.Sprintf(" (without %s)", strings.Join(v.missing, ", "))
}

// serviceConfig loads the config a service mounts as that service sees
// it, and validates it for the service's daemon.
func serviceConfig(t *testing.T, p *types.Project, d daemon) (*config.Config, view) {
	t.Helper()
	v := rewriteConfig(t, p, d)
	if v.file == "" {
		return nil, v
	}
	cfg, err := config.Load(v.file)
	if err == nil {
		err = cfg.Validate(d.part)
	}
	if err != nil {
		src, _ := configMount(d.svc)
		t.Errorf("service %s: %s as `%s` sees it%s: %v", d.name, rel(src), d.part, v.without(), err)
		return nil, v
	}
	return &cfg, v
}

// rewriteConfig copies the config a service mounts so that it loads here
// as in the container: a file it names is copied under a temp root from
// the service's secrets and bind mounts (one they do not provide stays
// missing) and {env: X} reads the service's environment. Only what the
// service's own daemon reads must be there.
func rewriteConfig(t *testing.T, p *types.Project, d daemon) view {
	t.Helper()
	src, ok := configMount(d.svc)
	if !ok {
		t.Errorf("service %s: no bind mount for the config file (PAGEWATCH_CONFIG or --config)", d.name)
		return view{}
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", rel(src), err)
	}
	v := view{refs: map[string]secretRef{}}
	files := map[string]*yaml.Node{}
	findRefs(&doc, "", v.refs, files)
	fakeRoot := t.TempDir()
	lacks := func(key, what string) {
		if inPart(d.part, key) {
			t.Errorf("service %s: config %s reads %s, which the service lacks (%s)", d.name, key, v.refs[key].value, what)
		} else {
			v.missing = append(v.missing, key)
		}
	}
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
			lacks(key, "no secret or bind mount of it provides that file")
		}
		n.Value = filepath.Join(fakeRoot, n.Value)
	}
	for key, r := range v.refs {
		if r.kind != "env" {
			continue
		}
		t.Setenv(r.value, "")
		if e := d.svc.Environment[r.value]; e != nil {
			t.Setenv(r.value, *e)
		} else {
			os.Unsetenv(r.value)
			lacks(key, "not in its environment")
		}
	}
	slices.Sort(v.missing)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	v.file = filepath.Join(fakeRoot, "pagewatch.yaml")
	if err := os.WriteFile(v.file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return v
}

func rel(p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}
