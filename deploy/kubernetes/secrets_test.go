package kubernetes_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/pagewatch/pagewatch/config"
)

// inPart reports whether a dotted config key is one the part reads; a
// secret under any other key fails only other daemons when unreadable.
func inPart(part config.Part, key string) bool {
	return slices.ContainsFunc(part.Sections(), func(s string) bool {
		return key == s || strings.HasPrefix(key, s+".") || strings.HasPrefix(key, s+"[")
	})
}

// TestLeastPrivilege: a daemon container sees only the Secret keys its
// daemon reads (config.Part.Sections), as files or variables, and its
// config still loads and validates there (containerConfig); containers
// that are not pagewatch's get none of its Secrets, and a pod holds no
// Secret volume that no container mounts.
func TestLeastPrivilege(t *testing.T) {
	o := load(t)
	for _, x := range daemons(t, o) {
		w := containerConfig(t, o, x)
		ownFile, ownEnv := map[string]bool{}, map[string]bool{}
		for key, p := range w.files {
			ownFile[p] = ownFile[p] || inPart(x.part, key)
		}
		for key, e := range w.envs {
			ownEnv[e] = ownEnv[e] || inPart(x.part, key)
		}
		var files, envs []string
		for _, p := range slices.Sorted(maps.Keys(w.secrets)) {
			files = append(files, p)
			if !ownFile[p] {
				t.Errorf("%s: sees %s at %s, which `%s` does not read: mount only the keys it uses (items:)", x.where, w.secrets[p], p, x.part)
			}
		}
		for _, e := range x.c.Env {
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
				envs = append(envs, e.Name)
				if !ownEnv[e.Name] {
					t.Errorf("%s: env %s from Secret %s key %s, which `%s` does not read", x.where, e.Name, r.SecretKeyRef.Name, r.SecretKeyRef.Key, x.part)
				}
			}
		}
		for _, ef := range x.c.EnvFrom {
			if ef.SecretRef != nil {
				t.Errorf("%s: envFrom Secret %s gives it every key; name the ones `%s` reads in env", x.where, ef.SecretRef.Name, x.part)
			}
		}
		for _, m := range x.c.VolumeMounts {
			for _, v := range x.deploy.Spec.Template.Spec.Volumes {
				if v.Name == m.Name && v.Projected != nil {
					t.Errorf("%s: projected volume %s: this test reads secret and configMap volumes only; use those", x.where, m.Name)
				}
			}
		}
		t.Logf("%s (%s): secret files %v, secret env %v; config valid: %t, without %v", x.where, x.part, files, envs, w.cfg != nil, w.missing)
	}
	for name, d := range o.deployments {
		pod := d.Spec.Template.Spec
		mounted := map[string]bool{}
		for _, c := range allContainers(pod) {
			for _, m := range c.VolumeMounts {
				mounted[m.Name] = true
			}
			if c.Image == image {
				continue
			}
			for _, m := range c.VolumeMounts {
				if v := volume(pod, m.Name); v != nil && v.Secret != nil && o.secrets[v.Secret.SecretName] != nil {
					t.Errorf("Deployment %s, container %s: mounts Secret %s, pagewatch's", name, c.Name, v.Secret.SecretName)
				}
			}
			for _, e := range c.Env {
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && o.secrets[r.SecretKeyRef.Name] != nil {
					t.Errorf("Deployment %s, container %s: env %s from Secret %s, pagewatch's", name, c.Name, e.Name, r.SecretKeyRef.Name)
				}
			}
		}
		for _, v := range pod.Volumes {
			if v.Secret != nil && !mounted[v.Name] {
				t.Errorf("Deployment %s: Secret volume %s is mounted by no container; drop it", name, v.Name)
			}
		}
	}
}

func volume(pod corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}
