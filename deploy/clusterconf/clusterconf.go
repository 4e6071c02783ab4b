// Package clusterconf checks the cluster shape of the deploy files
// (deploy/compose/cluster, deploy/kubernetes/cluster) without running
// anything: the nats-server configs as nats-server itself parses them,
// the ClickHouse and ClickHouse Keeper XML, and the pagewatch config,
// against each other. The compose and Kubernetes tests each read their
// files into a Shape; Check says what does not fit.
package clusterconf

import (
	"encoding/xml"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/pagewatch/pagewatch/config"
)

// XML is one element of a ClickHouse config file.
type XML struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []*XML     `xml:",any"`
}

// ParseXML reads a ClickHouse or Keeper config file.
func ParseXML(data []byte) (*XML, error) {
	var x XML
	if err := xml.Unmarshal(data, &x); err != nil {
		return nil, err
	}
	if x.XMLName.Local != "clickhouse" && x.XMLName.Local != "yandex" {
		return nil, fmt.Errorf("root element <%s>, want <clickhouse>", x.XMLName.Local)
	}
	return &x, nil
}

// All is every element at path below x.
func (x *XML) All(path ...string) []*XML {
	if x == nil {
		return nil
	}
	if len(path) == 0 {
		return []*XML{x}
	}
	var out []*XML
	for _, n := range x.Nodes {
		if n.XMLName.Local == path[0] {
			out = append(out, n.All(path[1:]...)...)
		}
	}
	return out
}

// One is the element at path, or nil unless there is exactly one.
func (x *XML) One(path ...string) *XML {
	if all := x.All(path...); len(all) == 1 {
		return all[0]
	}
	return nil
}

// Value is an element's text, or what its from_env attribute names in
// env; ok is false for a missing element or variable.
func (x *XML) Value(env map[string]string) (string, bool) {
	if x == nil {
		return "", false
	}
	for _, a := range x.Attrs {
		if a.Name.Local == "from_env" {
			v, ok := env[a.Value]
			return v, ok
		}
	}
	return strings.TrimSpace(x.Text), true
}

// ParseNATS parses a nats-server config file with nats-server's own
// parser, the file's $VARIABLES taken from env.
func ParseNATS(path string, env map[string]string) (*server.Options, error) {
	for k, v := range env {
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		defer func() {
			if had {
				os.Setenv(k, old)
			} else {
				os.Unsetenv(k)
			}
		}()
	}
	return server.ProcessConfigFile(path)
}

// NATSNode is one nats-server: the host clients and routes reach it by.
type NATSNode struct {
	Host string
	Opts *server.Options
}

// Keeper is one ClickHouse Keeper node.
type Keeper struct {
	Host string
	Env  map[string]string
	Conf *XML
}

// Server is one clickhouse-server: its config.d file and environment.
type Server struct {
	Host string
	Env  map[string]string
	Conf *XML
}

// Shape is the cluster as the deploy files set it up, and a pagewatch
// config that is to use it.
type Shape struct {
	NATS       []NATSNode
	Keepers    []Keeper
	ClickHouse []Server
	Config     *config.Config
}

// Check lists every way the parts do not fit: the NATS nodes route to
// each other and run JetStream; the Keeper nodes form one raft group with
// distinct ids; every server's zookeeper is those nodes, its macros give
// it a distinct replica name, and its remote_servers hold the cluster
// pagewatch names with every server in it once and internal_replication
// on; and pagewatch's config lists every NATS node, asks for replicas on
// all of them, and names that cluster.
func (s Shape) Check() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	errs = append(errs, s.checkNATS()...)
	keeperPort := map[string]string{}
	errs = append(errs, s.checkKeepers(keeperPort)...)

	cluster := ""
	if s.Config != nil {
		cluster = s.Config.ClickHouse.Cluster
	}
	if cluster == "" {
		add("pagewatch config: clickhouse.cluster is not set")
	}
	replicas := map[string]string{} // shard/replica macro → host
	for _, ch := range s.ClickHouse {
		var zk []string
		for _, n := range ch.Conf.All("zookeeper", "node") {
			h, _ := n.One("host").Value(ch.Env)
			p, _ := n.One("port").Value(ch.Env)
			zk = append(zk, h+":"+p)
		}
		var want []string
		for h, p := range keeperPort {
			want = append(want, h+":"+p)
		}
		if len(want) > 0 && !sameSet(zk, want) {
			add("clickhouse %s: zookeeper nodes %v, want the Keeper nodes %v", ch.Host, zk, want)
		}
		shard, okS := ch.Conf.One("macros", "shard").Value(ch.Env)
		replica, okR := ch.Conf.One("macros", "replica").Value(ch.Env)
		if !okS || !okR || shard == "" || replica == "" {
			add("clickhouse %s: macros shard %q and replica %q: both are needed (the replication path and replica name use them)", ch.Host, shard, replica)
		} else if other, dup := replicas[shard+"/"+replica]; dup {
			add("clickhouse %s: macros shard %s replica %s, the same as %s's", ch.Host, shard, replica, other)
		} else {
			replicas[shard+"/"+replica] = ch.Host
		}
		c := ch.Conf.One("remote_servers", cluster)
		if c == nil {
			add("clickhouse %s: remote_servers has no cluster %q (clickhouse.cluster)", ch.Host, cluster)
			continue
		}
		var members []string
		for i, sh := range c.All("shard") {
			if v, _ := sh.One("internal_replication").Value(ch.Env); v != "true" {
				add("clickhouse %s: cluster %s shard %d: internal_replication %q, want true, or Distributed inserts store each row once per replica", ch.Host, cluster, i+1, v)
			}
			for _, r := range sh.All("replica") {
				h, _ := r.One("host").Value(ch.Env)
				members = append(members, h)
			}
		}
		var hosts []string
		for _, o := range s.ClickHouse {
			hosts = append(hosts, o.Host)
		}
		if !sameSet(members, hosts) {
			add("clickhouse %s: cluster %s holds %v, want every server once: %v", ch.Host, cluster, members, hosts)
		}
	}
	if len(s.ClickHouse) < 2 {
		add("%d ClickHouse servers: the cluster shape has at least two replicas", len(s.ClickHouse))
	}
	errs = append(errs, s.checkConfig()...)
	return errs
}

func (s Shape) checkNATS() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(s.NATS) != 3 {
		add("%d NATS nodes, want 3", len(s.NATS))
	}
	names := map[string]bool{}
	for _, n := range s.NATS {
		o := n.Opts
		if !o.JetStream {
			add("nats %s: JetStream is off", n.Host)
		}
		if o.StoreDir == "" {
			add("nats %s: no jetstream store_dir: the streams would live in a temp dir", n.Host)
		}
		if !o.SyncAlways {
			add("nats %s: sync_interval %s, not always: a power cut of two nodes at once would lose the writes they acknowledged last (docs/operations.md)", n.Host, o.SyncInterval)
		}
		if o.ServerName == "" || names[o.ServerName] {
			add("nats %s: server_name %q: each node needs its own", n.Host, o.ServerName)
		}
		names[o.ServerName] = true
		if o.Cluster.Name == "" || o.Cluster.Name != s.NATS[0].Opts.Cluster.Name {
			add("nats %s: cluster name %q, want one name on every node (%q)", n.Host, o.Cluster.Name, s.NATS[0].Opts.Cluster.Name)
		}
		var routes []string
		for _, r := range o.Routes {
			routes = append(routes, r.Host)
		}
		var want []string
		for _, m := range s.NATS {
			want = append(want, net.JoinHostPort(m.Host, strconv.Itoa(m.Opts.Cluster.Port)))
		}
		if !sameSet(routes, want) {
			add("nats %s: routes %v, want every node's cluster address %v", n.Host, routes, want)
		}
	}
	return errs
}

func (s Shape) checkKeepers(port map[string]string) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(s.Keepers) != 3 {
		add("%d Keeper nodes, want 3 (a raft group that survives losing one)", len(s.Keepers))
	}
	ids := map[string]string{}
	for _, k := range s.Keepers {
		ks := k.Conf.One("keeper_server")
		id, ok := ks.One("server_id").Value(k.Env)
		if !ok || id == "" {
			add("keeper %s: no server_id", k.Host)
		} else if other, dup := ids[id]; dup {
			add("keeper %s: server_id %s, the same as %s's", k.Host, id, other)
		}
		ids[id] = k.Host
		p, _ := ks.One("tcp_port").Value(k.Env)
		port[k.Host] = p
		var raft []string
		mine := false
		for _, srv := range ks.All("raft_configuration", "server") {
			sid, _ := srv.One("id").Value(k.Env)
			h, _ := srv.One("hostname").Value(k.Env)
			raft = append(raft, h)
			mine = mine || (sid == id && h == k.Host)
		}
		var want []string
		for _, o := range s.Keepers {
			want = append(want, o.Host)
		}
		if !sameSet(raft, want) {
			add("keeper %s: raft_configuration %v, want every Keeper node %v", k.Host, raft, want)
		}
		if !mine {
			add("keeper %s: server_id %s is not its own entry in raft_configuration", k.Host, id)
		}
	}
	return errs
}

func (s Shape) checkConfig() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	cfg := s.Config
	if cfg == nil {
		return []error{fmt.Errorf("no pagewatch config")}
	}
	var urls []string
	for _, u := range strings.Split(cfg.NATS.URL, ",") {
		p, err := url.Parse(strings.TrimSpace(u))
		if err != nil {
			add("nats.url %q: %v", u, err)
			continue
		}
		urls = append(urls, p.Host)
	}
	var want []string
	for _, n := range s.NATS {
		want = append(want, net.JoinHostPort(n.Host, strconv.Itoa(n.Opts.Port)))
	}
	if !sameSet(urls, want) {
		add("nats.url lists %v, want every node's client address %v, so a client whose node goes moves to another", urls, want)
	}
	if cfg.NATS.Replicas != len(s.NATS) {
		add("nats.replicas %d, want %d: a copy of every stream and bucket on each node", cfg.NATS.Replicas, len(s.NATS))
	}
	hosts := map[string]bool{}
	for _, ch := range s.ClickHouse {
		hosts[ch.Host] = true
	}
	for i, a := range cfg.ClickHouse.Addr {
		h, _, err := net.SplitHostPort(a)
		if err != nil || !hosts[h] {
			add("clickhouse.addr[%d] %q is none of the ClickHouse servers", i, a)
		}
	}
	return errs
}

// sameSet sorts both lists in place (the messages show them sorted) and
// reports whether they hold the same entries.
func sameSet(a, b []string) bool {
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
