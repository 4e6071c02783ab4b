package file_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/config/ingestconf"
)

// Sections must be the whole file's keys: a section another daemon reads
// but Sections lacks would be refused by every daemon but its own.
func TestSectionsAreTheWholeFilesKeys(t *testing.T) {
	var keys []string
	ty := reflect.TypeOf(config.Config{})
	for i := 0; i < ty.NumField(); i++ {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("yaml"), ",")
		keys = append(keys, name)
	}
	slices.Sort(keys)
	if got := slices.Sorted(slices.Values(file.Sections)); !slices.Equal(got, keys) {
		t.Errorf("file.Sections = %v, the whole file's keys are %v", got, keys)
	}
}

// A daemon passes over the sections other daemons read, is strict in its
// own, and refuses a key no daemon reads, listing every section.
func TestParseReadsOwnSectionsOnly(t *testing.T) {
	cfg := ingestconf.Default()
	err := file.Parse([]byte("worker: {namex: typo, for the worker to find}\nreceivers: [{name: x}]\ningest: {load: {batch_rows: 7}}\n"), &cfg)
	if err != nil {
		t.Fatalf("ingest refused another daemon's section: %v", err)
	}
	if cfg.Ingest.Load.BatchRows != 7 {
		t.Errorf("ingest.load.batch_rows = %d, want 7", cfg.Ingest.Load.BatchRows)
	}
	cfg = ingestconf.Default()
	err = file.Parse([]byte("ingest: {load: {batch_rowz: 7}}\n"), &cfg)
	if err == nil || !strings.Contains(err.Error(), "ingest.load.batch_rowz (line 1): unknown key") {
		t.Errorf("a typo in ingest's own section: got %v", err)
	}
	err = file.Parse([]byte("receiverz: []\n"), &cfg)
	if err == nil || !strings.Contains(err.Error(), "receiverz (line 1): unknown key (known keys here: clickhouse, console, ingest, log, mail, nats, receivers,") {
		t.Errorf("a key no daemon reads: got %v", err)
	}
}
