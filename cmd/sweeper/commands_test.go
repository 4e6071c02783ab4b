package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/internal/testenv"
)

func runSweeper(t *testing.T, cfg string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pagewatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code = daemon.Main(context.Background(), program, append([]string{"--config", path}, args...), &out, &errb, nil)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckListsRulesOrNamesTheBadLine(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "rules:\n  - {name: pricing, site: example.com, path: /pricing, threshold: 10, window: 1h, notify: {recipients: [ops@example.com]}}\n")
	cfg := fmt.Sprintf("sweeper:\n  rules_path: %s\n  rules:\n    - {name: blog, site: example.com, match: {glob: /blog/*}, threshold: [10, 100], window: day, zone: Europe/Berlin, notify: {recipients: [ops@example.com]}}\n", dir)

	code, out, errs := runSweeper(t, cfg, "check")
	if code != 0 || !strings.Contains(out, "2 rule(s) valid") || !strings.Contains(out, "glob /blog/*") || !strings.Contains(out, "10,100") {
		t.Fatalf("check: exit %d\n%s\n%s", code, out, errs)
	}

	folded := "ingest:\n  tail:\n    pages: {lowercase: true}\nsweeper:\n  rules:\n    - {name: upper, site: example.com, path: /Pricing, threshold: 1, window: all, notify: {recipients: [ops@example.com]}}\n"
	if code, out, errs := runSweeper(t, folded, "check"); code != 0 || !strings.Contains(out, `warning: rule upper: path "/Pricing" is recorded by ingest as "/pricing"`) {
		t.Errorf("check with lowercase pages: exit %d\n%s\n%s", code, out, errs)
	}

	twoWeeks := "sweeper:\n  rules:\n    - {name: short, match: {prefix: /}, window: 1h, unusual: {weeks: 2}, notify: {recipients: [ops@example.com]}}\n"
	if code, out, errs := runSweeper(t, twoWeeks, "check"); code != 0 || !strings.Contains(out, "warning: rule short: unusual.weeks 2: under 3, a weekend day's normal is read mostly from weekdays; use 3 or more") {
		t.Errorf("check with unusual.weeks 2: exit %d\n%s\n%s", code, out, errs)
	}

	bad := filepath.Join(dir, "b.yaml")
	writeFile(t, bad, "rules:\n  - name: pricing\n    site: example.com\n    path: /p\n    threshold: 0\n    window: 1h\n    notify: {recipients: [ops@example.com]}\n")
	code, _, errs = runSweeper(t, cfg, "check")
	for _, want := range []string{bad + ":2: rules[0].threshold: must be at least 1", `rule name "pricing" is already used at ` + filepath.Join(dir, "a.yaml") + ":2"} {
		if code != daemon.ExitUsage || !strings.Contains(errs, want) {
			t.Errorf("check with a bad file: exit %d, want %d and %q in:\n%s", code, daemon.ExitUsage, want, errs)
		}
	}
}

func TestDryRunAndBacktestRecordNothing(t *testing.T) {
	logger := testenv.Logger(t)
	b, ns := testenv.NATS(t, logger)
	ch, srv := testenv.ClickHouse(t, logger)
	now := time.Now().UTC()
	batch := hit.Batch{Seq: 1}
	for i := 0; i < 120; i++ {
		batch.Hits = append(batch.Hits, hit.Hit{Time: now.Add(-30 * time.Minute), Site: "example.com", Path: "/pricing", Offset: uint64(i)})
	}
	if err := ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("nats: {url: %q}\nclickhouse: {addr: [%q]}\nsweeper:\n  rules:\n    - {name: pricing, site: example.com, path: /pricing, threshold: 100, window: 1h, notify: {recipients: [ops@example.com]}}\n", ns.URL, srv.Addr)

	code, out, errs := runSweeper(t, cfg, "dry-run")
	if code != 0 || !strings.Contains(out, `"/pricing"`) || !strings.Contains(out, "1 crossing(s) would fire now") {
		t.Fatalf("dry-run: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runSweeper(t, cfg, "backtest", "--since", "2h")
	if code != 0 || !strings.Contains(out, "1 crossing(s); pricing 1") {
		t.Fatalf("backtest: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := runSweeper(t, cfg, "backtest", "--since", "yesterday"); code != daemon.ExitUsage || !strings.Contains(errs, "--since") {
		t.Errorf("bad --since: exit %d\n%s", code, errs)
	}

	// Neither recorded anything: no job, no crossing.
	info, err := b.JobsStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st, err := info.Info(context.Background()); err != nil || st.State.Msgs != 0 {
		t.Errorf("jobs after dry-run and backtest: %+v, %v", st.State, err)
	}
	if got := srv.Query(t, "SELECT count() FROM pagewatch.crossings"); got != "0\n" {
		t.Errorf("crossings recorded: %s", got)
	}
}

// A backtest with no rules is refused, naming the keys to set: its "0
// crossings" read as "nothing unusual" in data with a surge in it.
func TestBacktestWithoutRulesIsRefused(t *testing.T) {
	counts := filepath.Join(t.TempDir(), "views.csv")
	writeFile(t, counts, "timestamp,value\n2026-03-02 00:00:00,10\n2026-03-02 00:05:00,12\n")
	code, out, errs := runSweeper(t, "sweeper: {}\n", "backtest", "--counts", counts)
	if code != daemon.ExitUsage || !strings.Contains(errs, "no rules to replay: set sweeper.rules, or sweeper.rules_path") || out != "" {
		t.Errorf("exit %d, want %d and the keys to set\nstdout %q\nstderr %s", code, daemon.ExitUsage, out, errs)
	}
}

// A backtest of a CSV warns of a setting known to misjudge, as check
// and a starting sweeper do, and runs all the same.
func TestBacktestOfACSVWarnsOfWeeksUnderThree(t *testing.T) {
	counts := filepath.Join(t.TempDir(), "views.csv")
	writeFile(t, counts, "timestamp,value\n2026-03-02 00:00:00,10\n2026-03-02 00:05:00,12\n")
	cfg := "sweeper:\n  rules:\n    - {name: short, match: {prefix: /}, window: 1h, unusual: {weeks: 2}, notify: {recipients: [ops@example.com]}}\n"
	code, out, errs := runSweeper(t, cfg, "backtest", "--counts", counts)
	if code != 0 || !strings.Contains(errs, "rule short: unusual.weeks 2: under 3") || !strings.Contains(out, "0 crossing(s)") {
		t.Errorf("exit %d, want 0, the warning and the backtest\nstdout %q\nstderr %s", code, out, errs)
	}
}

// A backtest of the stored counts run by hand with NATS down says so and
// how to do without it, rather than waiting for it as a daemon does.
func TestBacktestWithoutNATSFailsSayingHowToDoWithout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing answers there now
	cfg := fmt.Sprintf("nats: {url: nats://%s}\nsweeper:\n  rules:\n    - {name: pricing, site: example.com, path: /pricing, threshold: 10, window: 1h, notify: {recipients: [ops@example.com]}}\n", addr)
	code, out, errs := runSweeper(t, cfg, "backtest", "--since", "1d", "--wait", "1s")
	if code == 0 || !strings.Contains(errs, "no answer in 1s") || !strings.Contains(errs, "--counts FILE") || out != "" {
		t.Errorf("exit %d, want an error saying NATS did not answer and how to do without\nstdout %q\nstderr %s", code, out, errs)
	}
}
