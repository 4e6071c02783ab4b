package deploy_test

import (
	"slices"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/pagewatch/pagewatch/deploy/clusterconf"
)

// TestComposeNATSSyncsEachWrite: the single-machine compose file's
// nats-server runs from a mounted config, parsed here with nats-server's
// own parser: JetStream on, its store on the named volume, and each write
// on disk before it is acknowledged (sync_interval: always). The cluster
// shapes are checked by deploy/clusterconf (TestComposeClusterShape,
// TestClusterShape).
func TestComposeNATSSyncsEachWrite(t *testing.T) {
	p := loadProjectFile(t, composeFile, "pagewatch")
	s, ok := p.Services["nats"]
	if !ok {
		t.Fatal("no service nats")
	}
	conf := ""
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && slices.Contains(s.Command, v.Target) {
			conf = v.Source
		}
	}
	if conf == "" {
		t.Fatalf("service nats: command %q names no mounted config file", s.Command)
	}
	opts, err := clusterconf.ParseNATS(conf, env(s))
	if err != nil {
		t.Fatalf("service nats: %s: %v", rel(conf), err)
	}
	if !opts.JetStream {
		t.Error("service nats: JetStream is off")
	}
	if !storedOnVolume(s, opts.StoreDir) {
		t.Errorf("service nats: jetstream store_dir %q is on no named volume: a recreated container would lose its streams", opts.StoreDir)
	}
	if !opts.SyncAlways {
		t.Errorf("service nats: sync_interval %s, not always: a power cut would lose the writes it acknowledged last (docs/operations.md)", opts.SyncInterval)
	}
	if opts.HTTPPort != 8222 {
		t.Errorf("service nats: monitoring on port %d, want 8222 (the healthcheck's)", opts.HTTPPort)
	}
}
