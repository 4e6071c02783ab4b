package deploy_test

// Checks deploy/compose/cluster/docker-compose.yml, the cluster shape,
// without a Docker engine: compose-go loads and validates it; the NATS,
// Keeper and ClickHouse configs each node mounts are parsed (nats-server's
// own parser, XML) with that node's environment and checked against each
// other and against the pagewatch config (deploy/clusterconf); and that
// config is loaded and validated for each daemon as its service sees it.

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/deploy/clusterconf"
)

const clusterComposeFile = "compose/cluster/docker-compose.yml"

// clusterReplicas is what each scaled daemon runs in the cluster shape.
var clusterReplicas = map[string]int{"ingest-load": 3, "sweeper": 2, "worker": 3}

// mounted is the repository file a service bind-mounts at target.
func mounted(t *testing.T, name string, s types.ServiceConfig, target string) []byte {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			data, err := os.ReadFile(v.Source)
			if err != nil {
				t.Fatalf("service %s: %v", name, err)
			}
			return data
		}
	}
	t.Fatalf("service %s: nothing mounted at %s", name, target)
	return nil
}

func env(s types.ServiceConfig) map[string]string {
	out := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

func TestComposeClusterShape(t *testing.T) {
	p := loadProjectFile(t, clusterComposeFile, "pagewatch-cluster")
	var shape clusterconf.Shape
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range p.Services {
			if !yield(n) {
				return
			}
		}
	}) {
		s := p.Services[name]
		switch {
		case strings.HasPrefix(s.Image, "nats:"):
			conf := ""
			for _, v := range s.Volumes {
				if v.Type == types.VolumeTypeBind && slices.Contains(s.Command, v.Target) {
					conf = v.Source
				}
			}
			if conf == "" {
				t.Fatalf("service %s: command %q names no mounted config file", name, s.Command)
			}
			opts, err := clusterconf.ParseNATS(conf, env(s))
			if err != nil {
				t.Fatalf("service %s: %s: %v", name, rel(conf), err)
			}
			if !storedOnVolume(s, opts.StoreDir) {
				t.Errorf("service %s: jetstream store_dir %s is on no named volume: a recreated container would lose its streams", name, opts.StoreDir)
			}
			shape.NATS = append(shape.NATS, clusterconf.NATSNode{Host: name, Opts: opts})
		case strings.HasPrefix(s.Image, "clickhouse/clickhouse-keeper:"):
			x, err := clusterconf.ParseXML(mounted(t, name, s, "/etc/clickhouse-keeper/keeper_config.d/pagewatch.xml"))
			if err != nil {
				t.Fatalf("service %s: keeper config: %v", name, err)
			}
			shape.Keepers = append(shape.Keepers, clusterconf.Keeper{Host: name, Env: env(s), Conf: x})
		case strings.HasPrefix(s.Image, "clickhouse/clickhouse-server:"):
			x, err := clusterconf.ParseXML(mounted(t, name, s, "/etc/clickhouse-server/config.d/pagewatch-cluster.xml"))
			if err != nil {
				t.Fatalf("service %s: clickhouse config: %v", name, err)
			}
			e := env(s)
			// The entrypoint exports the cluster secret from its compose secret.
			if strings.Contains(strings.Join(s.Entrypoint, " "), "/run/secrets/clickhouse_cluster_secret") && secretAt(s, "/run/secrets/clickhouse_cluster_secret") != "" {
				e["CLICKHOUSE_CLUSTER_SECRET"] = "set"
			}
			for _, c := range x.One("remote_servers").All() {
				for _, cl := range c.Nodes {
					if v, ok := cl.One("secret").Value(e); !ok || v == "" {
						t.Errorf("service %s: cluster %s: its <secret> comes from nothing the service provides", name, cl.XMLName.Local)
					}
				}
			}
			shape.ClickHouse = append(shape.ClickHouse, clusterconf.Server{Host: name, Env: e, Conf: x})
		}
	}
	for _, d := range daemons(t, p) {
		cfg, _ := serviceConfig(t, p, d)
		if cfg == nil {
			continue
		}
		if shape.Config == nil {
			shape.Config = cfg
		}
		if d.part == config.Console {
			checkCookieSecure(t, "service "+d.name, *cfg)
		}
		got := 1
		if d.svc.Deploy != nil && d.svc.Deploy.Replicas != nil {
			got = *d.svc.Deploy.Replicas
		}
		if want := max(1, clusterReplicas[d.name]); got != want {
			t.Errorf("service %s: %d replicas, want %d", d.name, got, want)
		}
		// A daemon starts once every node it may be sent to is up.
		var needs []string
		for _, n := range shape.NATS {
			needs = append(needs, n.Host)
		}
		if d.part != config.IngestTail {
			for _, ch := range shape.ClickHouse {
				needs = append(needs, ch.Host)
			}
		}
		for _, dep := range needs {
			if c := d.svc.DependsOn[dep].Condition; c != types.ServiceConditionHealthy {
				t.Errorf("service %s: depends_on %s: condition %q, want service_healthy", d.name, dep, c)
			}
		}
	}
	for _, err := range shape.Check() {
		t.Error(err)
	}
	for name, s := range p.Services {
		for dep, d := range s.DependsOn {
			if d.Condition == types.ServiceConditionHealthy && p.Services[dep].HealthCheck == nil {
				t.Errorf("service %s: depends_on %s with service_healthy, but %s has no healthcheck", name, dep, dep)
			}
		}
	}
	for name, sec := range p.Secrets {
		if _, err := os.Stat(sec.File); err != nil {
			t.Errorf("secret %s: %v", name, err)
		}
	}
	t.Logf("%d NATS nodes, %d Keeper nodes, %d ClickHouse replicas; cluster %q", len(shape.NATS), len(shape.Keepers), len(shape.ClickHouse), shape.Config.ClickHouse.Cluster)
}

// storedOnVolume reports whether dir is on a named volume of the service.
func storedOnVolume(s types.ServiceConfig, dir string) bool {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeVolume && (dir == v.Target || strings.HasPrefix(dir, v.Target+"/")) {
			return true
		}
	}
	return false
}
