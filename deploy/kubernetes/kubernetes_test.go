package kubernetes_test

// Checks the manifests without a cluster: every document is decoded
// strictly into its real Kubernetes type (k8s.io/api), so a misspelt or
// misplaced field fails; then the objects are checked against each other
// and against the pagewatch config in the ConfigMap, loaded as each
// container would see it (its secret files and environment).

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// replicas each Deployment must ask for; hpas, the Deployments that must
// have a HorizontalPodAutoscaler.
var (
	replicas = map[string]int32{"pagewatch-ingest-load": 2, "pagewatch-sweeper": 2, "pagewatch-worker": 2, "pagewatch-console": 2}
	hpas     = []string{"pagewatch-ingest-load", "pagewatch-worker"}
)

const image = "pagewatch" // set by kustomization.yaml's images:

type objects struct {
	docs        int
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	deployments map[string]*appsv1.Deployment
	// statefulSets are the servers of the cluster shape (cluster/).
	statefulSets map[string]*appsv1.StatefulSet
	hpas         []*autoscalingv2.HorizontalPodAutoscaler
	pdbs         []*policyv1.PodDisruptionBudget
	services     []*corev1.Service
}

type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels"`
	Resources []string `json:"resources"`
	// Patches are strategic-merge patch files (path:), each one document
	// naming the object it patches.
	Patches []struct {
		Path string `json:"path"`
	} `json:"patches"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

func load(t *testing.T) objects {
	t.Helper()
	return loadDir(t, ".")
}

// loadDir renders the kustomization in dir as kustomize would for these
// files: its resources (a directory is another kustomization, rendered
// first), then its patches, then decodes every object strictly.
func loadDir(t *testing.T, dir string) objects {
	t.Helper()
	o := objects{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}, deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{}}
	for _, d := range render(t, dir) {
		if err := o.add(d.data); err != nil {
			t.Errorf("%s: %v", d.where, err)
		}
	}
	return o
}

// rendered is one object's document and where it came from.
type rendered struct {
	where string
	data  []byte
}

func render(t *testing.T, dir string) []rendered {
	t.Helper()
	var k kustomization
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err == nil {
		err = sigsyaml.UnmarshalStrict(data, &k)
	}
	if err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	var files, patches []string
	var out []rendered
	for _, r := range k.Resources {
		if fi, err := os.Stat(filepath.Join(dir, r)); err == nil && fi.IsDir() {
			out = append(out, render(t, filepath.Join(dir, r))...)
			continue
		}
		files = append(files, r)
	}
	for _, p := range k.Patches {
		patches = append(patches, p.Path)
	}
	here, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for i := range here {
		here[i] = filepath.Base(here[i])
	}
	here = slices.DeleteFunc(here, func(f string) bool { return f == "kustomization.yaml" || slices.Contains(patches, f) })
	if !slices.Equal(slices.Sorted(slices.Values(files)), here) {
		t.Errorf("%s/kustomization.yaml resources %v, want every manifest there but the patches: %v", dir, files, here)
	}
	if dir == "." {
		named := false
		for _, i := range k.Images {
			named = named || i.Name == image
		}
		if !named {
			t.Errorf("kustomization.yaml: no images: entry for %q", image)
		}
	}
	for _, f := range files {
		out = append(out, docs(t, filepath.Join(dir, f))...)
	}
	for _, p := range patches {
		ds := docs(t, filepath.Join(dir, p))
		if len(ds) != 1 {
			t.Fatalf("%s: %d documents; a patch file holds one", ds[0].where, len(ds))
		}
		if !patchInto(t, out, ds[0]) {
			t.Errorf("%s: patches no object of the resources", ds[0].where)
		}
	}
	return out
}

// docs splits a manifest file into its non-empty documents.
func docs(t *testing.T, path string) []rendered {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []rendered
	for i, doc := range docSep.Split(string(data), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		out = append(out, rendered{fmt.Sprintf("%s, document %d", path, i+1), []byte(doc)})
	}
	return out
}

// patchInto applies a patch to the object of the same kind and name. The
// patches here hold no lists, where a strategic merge differs from a JSON
// merge patch (RFC 7386), so the latter is what is applied; a list in a
// patch fails the test rather than being merged wrongly.
func patchInto(t *testing.T, objs []rendered, patch rendered) bool {
	t.Helper()
	var p map[string]any
	if err := sigsyaml.Unmarshal(patch.data, &p); err != nil {
		t.Fatalf("%s: %v", patch.where, err)
	}
	id := func(m map[string]any) string {
		md, _ := m["metadata"].(map[string]any)
		return fmt.Sprint(m["apiVersion"], " ", m["kind"], " ", md["name"])
	}
	for i, o := range objs {
		var m map[string]any
		if err := sigsyaml.Unmarshal(o.data, &m); err != nil {
			t.Fatalf("%s: %v", o.where, err)
		}
		if id(m) != id(p) {
			continue
		}
		merged, err := sigsyaml.Marshal(mergePatch(t, patch.where, m, p))
		if err != nil {
			t.Fatal(err)
		}
		objs[i] = rendered{o.where + ", patched by " + patch.where, merged}
		return true
	}
	return false
}

func mergePatch(t *testing.T, where string, obj, patch map[string]any) map[string]any {
	for k, v := range patch {
		switch pv := v.(type) {
		case []any:
			t.Fatalf("%s: key %s is a list; patch maps and scalars only", where, k)
		case map[string]any:
			ov, _ := obj[k].(map[string]any)
			if ov == nil {
				ov = map[string]any{}
			}
			obj[k] = mergePatch(t, where, ov, pv)
		case nil:
			delete(obj, k)
		default:
			obj[k] = v
		}
	}
	return obj
}

// add decodes one document strictly into the type its kind names.
func (o *objects) add(doc []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name, Namespace string }
	}
	if err := sigsyaml.Unmarshal(doc, &head); err != nil {
		return err
	}
	if head.APIVersion == "" || head.Kind == "" || head.Metadata.Name == "" {
		return fmt.Errorf("apiVersion %q, kind %q, metadata.name %q: all three are needed", head.APIVersion, head.Kind, head.Metadata.Name)
	}
	if head.Metadata.Namespace != "" {
		return fmt.Errorf("%s %s: names namespace %q; the manifests are namespace-agnostic", head.Kind, head.Metadata.Name, head.Metadata.Namespace)
	}
	o.docs++
	var obj any
	want := map[string]string{"ConfigMap": "v1", "Secret": "v1", "Service": "v1", "Deployment": "apps/v1", "StatefulSet": "apps/v1",
		"HorizontalPodAutoscaler": "autoscaling/v2", "PodDisruptionBudget": "policy/v1"}[head.Kind]
	switch head.Kind {
	case "ConfigMap":
		obj = &corev1.ConfigMap{}
	case "Secret":
		obj = &corev1.Secret{}
	case "Service":
		obj = &corev1.Service{}
	case "Deployment":
		obj = &appsv1.Deployment{}
	case "StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	default:
		return fmt.Errorf("kind %s: not one this test decodes; add it", head.Kind)
	}
	if head.APIVersion != want {
		return fmt.Errorf("%s %s: apiVersion %s, want %s", head.Kind, head.Metadata.Name, head.APIVersion, want)
	}
	if err := sigsyaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%s %s: %v", head.Kind, head.Metadata.Name, err)
	}
	switch v := obj.(type) {
	case *corev1.ConfigMap:
		o.configMaps[v.Name] = v
	case *corev1.Secret:
		o.secrets[v.Name] = v
	case *corev1.Service:
		o.services = append(o.services, v)
	case *appsv1.Deployment:
		o.deployments[v.Name] = v
	case *appsv1.StatefulSet:
		o.statefulSets[v.Name] = v
	case *autoscalingv2.HorizontalPodAutoscaler:
		o.hpas = append(o.hpas, v)
	case *policyv1.PodDisruptionBudget:
		o.pdbs = append(o.pdbs, v)
	}
	return nil
}

// secretKeys lists a Secret's keys, from data and stringData.
func (o objects) secretKeys(name string) map[string]bool {
	keys := map[string]bool{}
	if s := o.secrets[name]; s != nil {
		for k := range s.Data {
			keys[k] = true
		}
		for k := range s.StringData {
			keys[k] = true
		}
	}
	return keys
}

func (o objects) secretValue(name, key string) (string, bool) {
	s, ok := o.secrets[name]
	if !ok {
		return "", false
	}
	if v, ok := s.StringData[key]; ok {
		return v, true
	}
	v, ok := s.Data[key]
	return string(v), ok
}

// allContainers lists a pod's containers, init containers (sidecars) first.
func allContainers(p corev1.PodSpec) []corev1.Container {
	return append(slices.Clone(p.InitContainers), p.Containers...)
}

// readyz reports whether a container's readiness is its /readyz, which
// checks dependencies shared by every replica.
func readyz(c corev1.Container) bool {
	p := c.ReadinessProbe
	return p != nil && p.HTTPGet != nil && p.HTTPGet.Path == "/readyz"
}

func ptr[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

func TestManifests(t *testing.T) {
	o := load(t)
	containers := 0
	for name, d := range o.deployments {
		pod := d.Spec.Template.Spec
		if d.Spec.Selector == nil || !subset(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("Deployment %s: selector does not match its pod template's labels", name)
		}
		if want, ok := replicas[name]; ok && (d.Spec.Replicas == nil || *d.Spec.Replicas != want) {
			t.Errorf("Deployment %s: replicas %s, want %d", name, ptr(d.Spec.Replicas), want)
		}
		vols := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			vols[v.Name] = v
			if v.ConfigMap != nil && o.configMaps[v.ConfigMap.Name] == nil {
				t.Errorf("Deployment %s: volume %s: no ConfigMap %s", name, v.Name, v.ConfigMap.Name)
			}
			if v.Secret != nil && o.secrets[v.Secret.SecretName] == nil {
				t.Errorf("Deployment %s: volume %s: no Secret %s", name, v.Name, v.Secret.SecretName)
			}
		}
		for _, c := range allContainers(pod) {
			containers++
			where := fmt.Sprintf("Deployment %s, container %s", name, c.Name)
			sc, psc := c.SecurityContext, pod.SecurityContext
			nonRoot := (sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
			if !nonRoot || sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				t.Errorf("%s: want runAsNonRoot, readOnlyRootFilesystem, allowPrivilegeEscalation: false, capabilities drop ALL", where)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Requests[r]; !ok {
					t.Errorf("%s: no %s request", where, r)
				}
				if _, ok := c.Resources.Limits[r]; !ok {
					t.Errorf("%s: no %s limit", where, r)
				}
			}
			for _, m := range c.VolumeMounts {
				v, ok := vols[m.Name]
				if !ok {
					t.Errorf("%s: mounts volume %s, which the pod lacks", where, m.Name)
				} else if m.SubPath != "" && v.ConfigMap != nil && o.configMaps[v.ConfigMap.Name] != nil {
					if _, ok := o.configMaps[v.ConfigMap.Name].Data[m.SubPath]; !ok {
						t.Errorf("%s: subPath %s: no such key in ConfigMap %s", where, m.SubPath, v.ConfigMap.Name)
					}
				}
			}
			for _, e := range c.Env {
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
					if _, ok := o.secretValue(r.SecretKeyRef.Name, r.SecretKeyRef.Key); !ok {
						t.Errorf("%s: env %s: no key %s in Secret %s", where, e.Name, r.SecretKeyRef.Key, r.SecretKeyRef.Name)
					}
				}
			}
		}
	}
	for _, name := range hpas {
		found := false
		for _, h := range o.hpas {
			if h.Spec.ScaleTargetRef.Name == name {
				found = true
			}
		}
		if !found {
			t.Errorf("Deployment %s: no HorizontalPodAutoscaler", name)
		}
	}
	for _, h := range o.hpas {
		ref := h.Spec.ScaleTargetRef
		d, ok := o.deployments[ref.Name]
		if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || !ok {
			t.Errorf("HPA %s: targets %s %s %s, not a Deployment here", h.Name, ref.APIVersion, ref.Kind, ref.Name)
			continue
		}
		if h.Spec.MinReplicas == nil || d.Spec.Replicas == nil || *h.Spec.MinReplicas < *d.Spec.Replicas || h.Spec.MaxReplicas <= *h.Spec.MinReplicas {
			t.Errorf("HPA %s: minReplicas %s must be at least the Deployment's %s, maxReplicas %d above it", h.Name, ptr(h.Spec.MinReplicas), ptr(d.Spec.Replicas), h.Spec.MaxReplicas)
		}
		cpu := slices.ContainsFunc(h.Spec.Metrics, func(m autoscalingv2.MetricSpec) bool {
			return m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.Type == autoscalingv2.UtilizationMetricType
		})
		if !cpu {
			t.Errorf("HPA %s: want a CPU utilization metric", h.Name)
		}
	}
	selects := func(sel map[string]string) bool {
		for _, d := range o.deployments {
			if subset(sel, d.Spec.Template.Labels) {
				return true
			}
		}
		return false
	}
	for _, p := range o.pdbs {
		if p.Spec.Selector == nil || !selects(p.Spec.Selector.MatchLabels) {
			t.Errorf("PodDisruptionBudget %s: selects no Deployment's pods", p.Name)
			continue
		}
		// Pods whose /readyz fails with a shared dependency go unready
		// together; the default policy then lets no drain evict them.
		for _, d := range o.deployments {
			if !subset(p.Spec.Selector.MatchLabels, d.Spec.Template.Labels) || !slices.ContainsFunc(allContainers(d.Spec.Template.Spec), readyz) {
				continue
			}
			if pol := p.Spec.UnhealthyPodEvictionPolicy; pol == nil || *pol != policyv1.AlwaysAllow {
				t.Errorf("PodDisruptionBudget %s: unhealthyPodEvictionPolicy %s, want AlwaysAllow: Deployment %s's pods are all unready while a dependency of /readyz is down, and would block node drains", p.Name, ptr(pol), d.Name)
			}
		}
	}
	for _, s := range o.services {
		if !selects(s.Spec.Selector) {
			t.Errorf("Service %s: selects no Deployment's pods", s.Name)
		}
	}
	t.Logf("%d documents: %d Deployments (%d containers), %d HPAs, %d PDBs, %d Services, %d ConfigMaps, %d Secrets",
		o.docs, len(o.deployments), containers, len(o.hpas), len(o.pdbs), len(o.services), len(o.configMaps), len(o.secrets))
}

// checkGOMEMLIMIT: a daemon container sets GOMEMLIMIT, as Go reads it, to
// about 90% of its memory limit, leaving room for what the Go runtime's
// soft limit does not count or overshoots.
func checkGOMEMLIMIT(t *testing.T, x daemon) {
	t.Helper()
	limit, ok := x.c.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		return // TestManifests reports it
	}
	for _, e := range x.c.Env {
		if e.Name != "GOMEMLIMIT" {
			continue
		}
		if e.ValueFrom != nil {
			t.Errorf("%s: GOMEMLIMIT from valueFrom is the whole limit (or, with a divisor, a bare number Go reads as bytes); set a literal, 90%% of limits.memory", x.where)
			return
		}
		want := fmt.Sprintf("%dMiB", limit.Value()*9/10>>20)
		n, ok := goByteCount(e.Value)
		if !ok {
			t.Errorf("%s: GOMEMLIMIT %q: Go rejects it (bytes, with an optional B, KiB, MiB, GiB or TiB suffix); want about 90%% of limits.memory %s, e.g. %s", x.where, e.Value, limit.String(), want)
		} else if ratio := float64(n) / float64(limit.Value()); ratio < 0.85 || ratio > 0.95 {
			t.Errorf("%s: GOMEMLIMIT %s is %.0f%% of limits.memory %s; want about 90%%, e.g. %s", x.where, e.Value, 100*ratio, limit.String(), want)
		}
		return
	}
	t.Errorf("%s: no GOMEMLIMIT; set it to 90%% of limits.memory, so the Go runtime collects garbage harder before the OOM killer comes", x.where)
}

// goByteCount parses a GOMEMLIMIT value as the Go runtime does: bytes,
// with an optional B, KiB, MiB, GiB or TiB suffix.
func goByteCount(s string) (int64, bool) {
	mult := int64(1)
	for i, suf := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if v, ok := strings.CutSuffix(s, suf); ok {
			s, mult = v, int64(1)<<(10*(i+1))
			break
		}
	}
	if mult == 1 {
		s = strings.TrimSuffix(s, "B")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n * mult, true
}
