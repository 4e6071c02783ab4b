package kubernetes_test

// Checks deploy/kubernetes/cluster, the cluster shape, without a cluster:
// the kustomization is rendered (this directory's manifests, patches on
// those of deploy/kubernetes) and decoded strictly; each server pod's
// config is read as that pod would (nats-server's own parser with the
// pod's $POD_NAME, the Keeper and ClickHouse XML with its environment)
// and checked against the others and the pagewatch config
// (deploy/clusterconf), which is loaded and validated for each daemon as
// its container sees it.

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/deploy/clusterconf"
)

// clusterReplicas each Deployment runs in the cluster shape.
var clusterReplicas = map[string]int32{"pagewatch-ingest-load": 3, "pagewatch-sweeper": 2, "pagewatch-worker": 3}

func TestClusterShape(t *testing.T) {
	o := loadDir(t, "cluster")
	var shape clusterconf.Shape
	pods := func(name string, want int32) (*appsv1.StatefulSet, int) {
		s := o.statefulSets[name]
		if s == nil {
			t.Fatalf("no StatefulSet %s", name)
		}
		checkStatefulSet(t, o, s)
		if s.Spec.Replicas == nil || *s.Spec.Replicas < want {
			t.Errorf("StatefulSet %s: replicas %s, want %d", name, ptr(s.Spec.Replicas), want)
		}
		return s, int(*s.Spec.Replicas)
	}

	s, n := pods("nats", 3)
	c := s.Spec.Template.Spec.Containers[0]
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	writeMounted(t, o, s, c, "/etc/nats/nats.conf", conf)
	// The include of the operator-mode auth, as the pod sees it (the
	// placeholder Secret holds only a comment).
	writeMounted(t, o, s, c, "/etc/nats/auth/auth.conf", filepath.Join(dir, "auth", "auth.conf"))
	for i := range n {
		pod := fmt.Sprintf("%s-%d", s.Name, i)
		opts, err := clusterconf.ParseNATS(conf, map[string]string{"POD_NAME": pod})
		if err != nil {
			t.Fatalf("%s: nats.conf: %v", pod, err)
		}
		if !claimed(s, c, opts.StoreDir) {
			t.Errorf("StatefulSet %s: jetstream store_dir %s is on none of its volumeClaimTemplates", s.Name, opts.StoreDir)
		}
		shape.NATS = append(shape.NATS, clusterconf.NATSNode{Host: pod + "." + s.Spec.ServiceName, Opts: opts})
	}

	s, n = pods("clickhouse-keeper", 3)
	c = s.Spec.Template.Spec.Containers[0]
	keeper := parseMounted(t, o, s, c, "/etc/clickhouse-keeper/keeper_config.d/pagewatch.xml")
	// The container's command sets the raft id from the pod's ordinal.
	if !strings.Contains(strings.Join(c.Command, " "), "KEEPER_SERVER_ID=$(( ${HOSTNAME##*-} + 1 ))") {
		t.Errorf("StatefulSet %s: command %q does not set KEEPER_SERVER_ID to the ordinal plus one", s.Name, c.Command)
	}
	for i := range n {
		pod := fmt.Sprintf("%s-%d", s.Name, i)
		shape.Keepers = append(shape.Keepers, clusterconf.Keeper{Host: pod + "." + s.Spec.ServiceName,
			Env: map[string]string{"KEEPER_SERVER_ID": strconv.Itoa(i + 1)}, Conf: keeper})
	}

	s, n = pods("clickhouse", 2)
	c = s.Spec.Template.Spec.Containers[0]
	ch := parseMounted(t, o, s, c, "/etc/clickhouse-server/config.d/pagewatch-cluster.xml")
	for i := range n {
		pod := fmt.Sprintf("%s-%d", s.Name, i)
		env := map[string]string{"HOSTNAME": pod}
		for _, e := range c.Env {
			switch {
			case e.ValueFrom == nil:
				env[e.Name] = e.Value
			case e.ValueFrom.SecretKeyRef != nil:
				if v, ok := o.secretValue(e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key); ok {
					env[e.Name] = v
				} else {
					t.Errorf("StatefulSet %s: env %s: no key %s in Secret %s", s.Name, e.Name, e.ValueFrom.SecretKeyRef.Key, e.ValueFrom.SecretKeyRef.Name)
				}
			}
		}
		for _, cl := range ch.One("remote_servers").All() {
			for _, x := range cl.Nodes {
				if v, ok := x.One("secret").Value(env); !ok || v == "" {
					t.Errorf("%s: cluster %s: its <secret> comes from nothing the pod provides", pod, x.XMLName.Local)
				}
			}
		}
		shape.ClickHouse = append(shape.ClickHouse, clusterconf.Server{Host: pod + "." + s.Spec.ServiceName, Env: env, Conf: ch})
	}

	for _, x := range daemons(t, o) {
		v := containerConfig(t, o, x)
		if v.cfg != nil && shape.Config == nil {
			shape.Config = v.cfg
		}
		if v.cfg != nil && x.part == config.Console {
			checkCookieSecure(t, x.where, *v.cfg)
		}
	}
	for name, want := range clusterReplicas {
		d := o.deployments[name]
		if d == nil || d.Spec.Replicas == nil || *d.Spec.Replicas != want {
			t.Errorf("Deployment %s: replicas %v, want %d", name, d, want)
		}
	}
	for _, h := range o.hpas {
		d := o.deployments[h.Spec.ScaleTargetRef.Name]
		if d != nil && (h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < *d.Spec.Replicas) {
			t.Errorf("HPA %s: minReplicas %s, below the Deployment's %d", h.Name, ptr(h.Spec.MinReplicas), *d.Spec.Replicas)
		}
	}
	for _, err := range shape.Check() {
		t.Error(err)
	}
	checkConfigPatch(t)
	t.Logf("%d documents; %d NATS nodes, %d Keeper nodes, %d ClickHouse replicas; %d Deployments; cluster %q",
		o.docs, len(shape.NATS), len(shape.Keepers), len(shape.ClickHouse), len(o.deployments), shape.Config.ClickHouse.Cluster)
}

// checkStatefulSet: its selector matches its pods, its serviceName is a
// headless Service here that selects them and publishes them unready
// (routes and raft need the names before the pods are ready), and every
// volume a container mounts exists, a ConfigMap's subPath included.
func checkStatefulSet(t *testing.T, o objects, s *appsv1.StatefulSet) {
	t.Helper()
	labels := s.Spec.Template.Labels
	if s.Spec.Selector == nil || !subset(s.Spec.Selector.MatchLabels, labels) {
		t.Errorf("StatefulSet %s: selector does not match its pod template's labels", s.Name)
	}
	headless := false
	for _, svc := range o.services {
		if svc.Name == s.Spec.ServiceName {
			headless = svc.Spec.ClusterIP == corev1.ClusterIPNone && svc.Spec.PublishNotReadyAddresses && subset(svc.Spec.Selector, labels)
		}
	}
	if !headless {
		t.Errorf("StatefulSet %s: serviceName %q is no headless Service here selecting its pods with publishNotReadyAddresses", s.Name, s.Spec.ServiceName)
	}
	vols := map[string]bool{}
	for _, v := range s.Spec.Template.Spec.Volumes {
		vols[v.Name] = true
		if v.ConfigMap != nil && o.configMaps[v.ConfigMap.Name] == nil {
			t.Errorf("StatefulSet %s: volume %s: no ConfigMap %s", s.Name, v.Name, v.ConfigMap.Name)
		}
		if v.Secret != nil && o.secrets[v.Secret.SecretName] == nil {
			t.Errorf("StatefulSet %s: volume %s: no Secret %s", s.Name, v.Name, v.Secret.SecretName)
		}
	}
	for _, pvc := range s.Spec.VolumeClaimTemplates {
		vols[pvc.Name] = true
	}
	for _, c := range s.Spec.Template.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				t.Errorf("StatefulSet %s, container %s: mounts %s, which the pod lacks", s.Name, c.Name, m.Name)
			}
		}
		if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
			t.Errorf("StatefulSet %s, container %s: no memory limit", s.Name, c.Name)
		}
	}
}

// mountedData is what a container sees at path: a ConfigMap key mounted
// by subPath, or a key of a mounted Secret or ConfigMap.
func mountedData(t *testing.T, o objects, s *appsv1.StatefulSet, c corev1.Container, path string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		key := m.SubPath
		if m.MountPath != path {
			rel, err := filepath.Rel(m.MountPath, path)
			if err != nil || strings.HasPrefix(rel, "..") || m.SubPath != "" {
				continue
			}
			key = rel
		}
		for _, v := range s.Spec.Template.Spec.Volumes {
			switch {
			case v.Name != m.Name:
			case v.ConfigMap != nil && o.configMaps[v.ConfigMap.Name] != nil:
				if d, ok := o.configMaps[v.ConfigMap.Name].Data[key]; ok {
					return d
				}
			case v.Secret != nil:
				if d, ok := o.secretValue(v.Secret.SecretName, key); ok {
					return d
				}
			}
		}
	}
	t.Fatalf("StatefulSet %s, container %s: nothing mounted at %s", s.Name, c.Name, path)
	return ""
}

func writeMounted(t *testing.T, o objects, s *appsv1.StatefulSet, c corev1.Container, path, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, []byte(mountedData(t, o, s, c, path)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func parseMounted(t *testing.T, o objects, s *appsv1.StatefulSet, c corev1.Container, path string) *clusterconf.XML {
	t.Helper()
	x, err := clusterconf.ParseXML([]byte(mountedData(t, o, s, c, path)))
	if err != nil {
		t.Fatalf("StatefulSet %s: %s: %v", s.Name, path, err)
	}
	return x
}

// claimed reports whether dir is on one of the StatefulSet's claims.
func claimed(s *appsv1.StatefulSet, c corev1.Container, dir string) bool {
	for _, m := range c.VolumeMounts {
		for _, pvc := range s.Spec.VolumeClaimTemplates {
			if m.Name == pvc.Name && (dir == m.MountPath || strings.HasPrefix(dir, m.MountPath+"/")) {
				return true
			}
		}
	}
	return false
}

// checkConfigPatch: the cluster's pagewatch config is the base one but
// for its nats and clickhouse sections, so the two do not drift apart.
func checkConfigPatch(t *testing.T) {
	t.Helper()
	read := func(dir string) map[string]any {
		o := objects{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}, deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{}}
		for _, d := range render(t, dir) {
			if err := o.add(d.data); err != nil {
				t.Fatal(err)
			}
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(o.configMaps["pagewatch-config"].Data["pagewatch.yaml"]), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "nats")
		delete(m, "clickhouse")
		return m
	}
	if base, cluster := read("."), read("cluster"); !reflect.DeepEqual(base, cluster) {
		t.Errorf("cluster/config-patch.yaml differs from config.yaml in more than nats and clickhouse; keep the rest the same")
	}
}
