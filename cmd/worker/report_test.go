package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

func TestReportCommand(t *testing.T) {
	ns := natstest.Start(t)
	chs := clickhousetest.Start(t)
	outbox := t.TempDir()
	cfg := fmt.Sprintf(`nats: {url: %q}
clickhouse: {addr: [%q]}
mail: {transport: file, file: {dir: %q}}
reports:
  - {name: daily, site: example.com, schedule: "@daily", period: day, receivers: [email], to: [ops@example.com]}
`, ns.URL, chs.Addr, outbox)
	code, out, errs := runWorker(t, cfg, "report", "daily", "--at", "2026-11-24T06:00:00Z")
	if code != 0 || !strings.Contains(out, "[pagewatch] Daily report for example.com: 2026-11-23") || !strings.Contains(out, "0 views on example.com") {
		t.Fatalf("preview: exit %d:\n%s%s", code, out, errs)
	}
	if files, _ := filepath.Glob(filepath.Join(outbox, "*.eml")); len(files) != 0 {
		t.Fatalf("a preview sent %v", files)
	}
	code, out, errs = runWorker(t, cfg, "report", "daily", "--at", "2026-11-24T06:00:00Z", "--send")
	if code != 0 || !strings.Contains(out, "sent to 1 receivers") {
		t.Fatalf("send: exit %d:\n%s%s", code, out, errs)
	}
	code, out, _ = runWorker(t, cfg, "report", "daily", "--at", "2026-11-24T07:00:00Z", "--send")
	if code != 0 || !strings.Contains(out, "sent to 0 receivers") {
		t.Fatalf("second send of the period: exit %d:\n%s", code, out)
	}
	if files, _ := filepath.Glob(filepath.Join(outbox, "*.eml")); len(files) != 1 {
		t.Fatalf("outbox: %v", files)
	}
	if code, _, errs := runWorker(t, cfg, "report", "weekly"); code == 0 || !strings.Contains(errs, `no report named "weekly"`) {
		t.Errorf("unknown report: exit %d: %s", code, errs)
	}
}
