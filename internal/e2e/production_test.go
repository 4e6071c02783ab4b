package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/freeport"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/retention"
)

// notMovedHere are the documented metrics this test does not make move,
// each with why and where it is made to; the test still requires them
// served. Everything else in deploy/metrics.md must move.
var notMovedHere = map[string]string{
	"pagewatch_ingest_discover_watch_errors_total":   "inotify failing (limits, overflow): pipeline/discover tests",
	"pagewatch_ingest_syslog_dropped_messages_total": "the UDP queue overflowing: pipeline/tail syslog tests",
	"pagewatch_ingest_load_redeliveries_total":       "a loader killed with a batch unacknowledged: TestThreeLoadersKilled20Times",
	"pagewatch_ingest_load_fetch_errors_total":       "a fetch failing; the NATS outage here does not always make one fail (the fetch in flight may outlast it): pipeline/load's TestConsumerDeletedIsRecreated",
	"pagewatch_retention_errors_total":               "ClickHouse failing during a retention run (hourly): pipeline/retention tests",
	"pagewatch_retention_claimed_elsewhere_total":    "two loaders in one retention period (the restart here starts a new one): TestTwoLoadersClaimEachPeriodOnce, the ClickHouse cluster tests",
	"pagewatch_sweeper_claim_conflicts_total":        "two sweepers claiming one crossing: pipeline/sweep racing tests",
	"pagewatch_sweeper_sites_late":                   "no rule here looks down, so no site's data is judged late: pipeline/sweep's TestTailerStoppedSendsNoDataNotDrops",
	"pagewatch_sweeper_sites_on_learned_clocks":      "no rule here learns clocks (zone: auto), nor do its 4 days of 2015 cross a change: pipeline/sweep's TestSweepLearnsEachSitesClocks",
	"pagewatch_sweeper_page_normal_reads_total":      "no rule here follows a page's trend (an unusual rule): pipeline/sweep's TestAFailedNormalReadIsRaisedUntilOneSucceeds",
	"pagewatch_sweeper_page_normal_read_failing":     "the same: TestAFailedNormalReadIsRaisedUntilOneSucceeds",
	"pagewatch_sweeper_pages_with_own_normal":        "the same: TestAFailedNormalReadIsRaisedUntilOneSucceeds, TestSweepReadsAPagesNoiseAsTheBacktestDoes",
	"pagewatch_worker_lock_conflicts_total":          "not deterministic with two workers: TestWorkersNeverSendOnePageTwiceAtOnce",
	"pagewatch_ratelimit_cas_conflicts_total":        "not deterministic with two workers: pipeline/ratelimit tests",
	"pagewatch_ratelimit_errors_total":               "NATS failing mid-reservation: pipeline/ratelimit tests",
	"pagewatch_worker_reports_total":                 "no report is configured here: pipeline/report tests",
	"pagewatch_worker_claims_taken_over_total":       "a worker dying between its claim and its record: TestClaimOfAnotherWorkerIsTakenOverAfterClaimTimeout, the worker kill tests",
	"pagewatch_visitor_salt_fetch_errors_total":      "NATS down when a line of a day without a salt in hand comes (here the day's salt is in hand before the outage): pipeline/visitor's NATS-down test",
	"pagewatch_ingest_tail_hits_keyless_total":       "the same, seen by the tailer: pipeline/tail's TestLinesKeylessWhileNATSIsDown",
	"pagewatch_ingest_tail_file_failures_total":      "a file that cannot be read (a directory where a log was; tests run as root, who reads any mode): pipeline/tail's TestOneUnreadableInputLeavesTheOthersFlowing",
	"pagewatch_ingest_tail_failing_files":            "the same, while its follower waits to try again",
	"pagewatch_ingest_tail_lines_dated_ahead_total":  "a line dated ahead of the clock (the real log here is of 2015): pipeline/tail's TestLinesDatedAheadAreCountedAndReported",
}

const productionRules = `    - {name: home-milestone, site: example.com, path: /, threshold: 150, window: all, notify: {recipients: [ops@example.com]}}
    - {name: pricing-hourly, site: example.com, path: /pricing, threshold: 40, window: 1h, notify: {recipients: [sales@example.com]}}
    - {name: blog-storm, site: example.com, match: {prefix: /blog/}, threshold: 3, window: all, storm_guard: {max_individual: 2}, notify: {recipients: [blog@example.com]}}`

// TestProductionMetricsAndReadiness runs every daemon the way production
// does (two tailers on one host, two workers, glob and syslog inputs, a
// backfill, rotation, retention, a tight mail rate limit) through a NATS,
// a ClickHouse and an SMTP outage, a SIGHUP and bad input. It scrapes each
// daemon's /metrics throughout and requires every metric documented in
// deploy/metrics.md served by its daemon and moving, and nothing
// undocumented; and each /readyz unready while its dependency is down and
// ready again after.
func TestProductionMetricsAndReadiness(t *testing.T) {
	b := setupWith(t, setupOptions{rules: productionRules, pages: "{}", load: defaultLoad, worker: defaultWorker})
	lines := realdata.Lines(t, realdata.ApacheLog)
	syslogAddr := fmt.Sprintf("127.0.0.1:%d", freeport.TCPAndUDP(t)) // one port, both protocols
	sites := filepath.Join(b.dir, "sites")
	editConfig(t, b.config,
		fmt.Sprintf("inputs: [{path: %q, site: example.com}]", b.log),
		fmt.Sprintf(`inputs: [{path: %q, site: example.com}, {path: %q, site: blog.example.com}]
    max_files: 3
    lease_ttl: 2s
    publish_timeout: 1s
    syslog: {listen_udp: %q, listen_tcp: %q, max_tcp_connections: 1, tags: [nginx]}
    syslog_input: {site: example.com, flush_interval: 100ms}`, b.log, filepath.Join(sites, "*", "access.log"), syslogAddr, syslogAddr),
		// The real log is from 2015: retention drops its days.
		"retention: {raw_hits_days: 0}", "retention: {raw_hits_days: 1}",
		"mail:\n", "  rate_limit: {global: {rate: 2, per: 1s, burst: 1}}\nmail:\n")
	standby := filepath.Join(b.dir, "standby.yaml")
	data, _ := os.ReadFile(b.config)
	// The standby has no syslog listener: the port is the first's.
	data = []byte(strings.Replace(string(data), "instance: e2e", "instance: e2e-standby", 1))
	writeFile(t, standby, strings.Replace(string(data), fmt.Sprintf("syslog: {listen_udp: %q, listen_tcp: %q, max_tcp_connections: 1, tags: [nginx]}", syslogAddr, syslogAddr), "syslog: {}", 1))

	// A rotated log for the backfill, the live one, two files for the glob.
	appendLines(t, b.log+".1", lines[:500])
	appendLines(t, b.log, lines[500:2000])
	for _, site := range []string{"a", "b", "c"} {
		if err := os.MkdirAll(filepath.Join(sites, site), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, site := range []string{"a", "b"} {
		appendLines(t, filepath.Join(sites, site, "access.log"), lines[2000:2100])
	}

	w := watchMetrics(250 * time.Millisecond)
	procs := map[string][]*proc{}
	run := func(daemon, config string, args ...string) {
		bin, rest, _ := strings.Cut(daemon, " ")
		if rest != "" {
			args = append([]string{rest}, args...)
		}
		p := b.startConfig(t, config, bin, args...)
		w.add(daemon, p.adminAddr(t))
		procs[daemon] = append(procs[daemon], p)
	}
	run("ingest load", b.config)
	run("ingest tail", b.config, "--from-start")
	run("sweeper", b.config)
	run("worker", b.config)
	run("worker", b.config)
	waitReady(t, procs, "ingest tail", "ingest load", "sweeper", "worker")
	run("ingest tail", standby) // stands by: the first holds every file's lease
	defer w.finish()

	// Traffic, bad lines, syslog, a file past max_files, a junk message.
	appendLines(t, b.log, lines[2000:6000])
	appendLines(t, b.log, freshLines(50))
	appendLines(t, b.log, [][]byte{[]byte("\x00\x01\xfe binary junk"), []byte(`GET / HTTP/1.1" 200`)})
	sendSyslog(t, syslogAddr, lines[6000:6100])
	sendSyslogTCP(t, syslogAddr, lines[6100:6200])
	appendLines(t, filepath.Join(sites, "c", "access.log"), lines[2100:2110])
	publishJunk(t, b.natsURL())
	b.smtp.WaitForMessages(t, 4, 60*time.Second)

	// Rename rotation, as logrotate does it.
	mustRename(t, b.log+".1", b.log+".2")
	mustRename(t, b.log, b.log+".1")
	appendLines(t, b.log, lines[6200:7000])

	// SIGHUP with one more rule.
	editConfig(t, b.config, "  rules:\n", "  rules:\n    - {name: about, site: example.com, path: /about/, threshold: 1, window: all, notify: {recipients: [ops@example.com]}}\n")
	for _, ps := range procs {
		for _, p := range ps {
			_ = p.cmd.Process.Signal(syscall.SIGHUP)
		}
	}
	for _, ps := range procs {
		for _, p := range ps {
			waitSample(t, p, "pagewatch_config_reloads_total", "result=ok", 1)
			for _, r := range []string{"result=rejected", "result=failed"} {
				waitSample(t, p, "pagewatch_config_reloads_total", r, 0)
			}
		}
	}
	waitSample(t, procs["sweeper"][0], "pagewatch_sweeper_rules", "", 4)

	// NATS down: every daemon unready, past the tail leases' TTL.
	stopped := time.Now()
	b.nats.Stop()
	waitReadiness(t, procs, 503, "nats", "ingest tail", "ingest load", "sweeper", "worker")
	t.Logf("NATS stopped: every daemon unready within %s", time.Since(stopped).Round(time.Millisecond))
	// The live file is still draining its rotated copy (rotate_grace):
	// lines for a glob file make the tailer publish into the outage.
	appendLines(t, b.log, lines[7000:8000])
	appendLines(t, filepath.Join(sites, "a", "access.log"), lines[7000:7100])
	time.Sleep(3 * time.Second)
	b.nats.Restart(t)
	back := time.Now()
	waitReady(t, procs, "ingest tail", "ingest load", "sweeper", "worker")
	t.Logf("NATS back: every daemon ready within %s", time.Since(back).Round(time.Millisecond))

	// ClickHouse down: the loader, sweeper and workers unready; not the tailer.
	stopped = time.Now()
	b.ch.Stop()
	waitReadiness(t, procs, 503, "clickhouse", "ingest load", "sweeper", "worker")
	t.Logf("ClickHouse stopped: its daemons unready within %s", time.Since(stopped).Round(time.Millisecond))
	waitReadiness(t, procs, 200, "", "ingest tail")
	appendLines(t, b.log, lines[8000:9000])
	time.Sleep(2 * time.Second)
	b.ch.Restart(t)
	back = time.Now()
	waitReady(t, procs, "ingest load", "sweeper", "worker")
	t.Logf("ClickHouse back: its daemons ready within %s", time.Since(back).Round(time.Millisecond))

	// A loader restarted, as in a deploy, in a new retention period:
	// retention runs at its start and drops the 2015 days loaded by now.
	// (The period the first loader claimed at its start is forgotten, as
	// an hour later; within it the restarted loader would run nothing.)
	// Lines published meanwhile wait in JetStream: consumer pending.
	procs["ingest load"][0].stop(t)
	procs["ingest load"] = nil
	forgetRetentionClaims(t, b)
	appendLines(t, filepath.Join(sites, "b", "access.log"), lines[8000:8100])
	time.Sleep(time.Second)
	run("ingest load", b.config)
	waitReady(t, procs, "ingest load")

	// The mail server down: the workers unready.
	stopped = time.Now()
	b.smtp.Stop()
	waitReadiness(t, procs, 503, "mail", "worker")
	t.Logf("SMTP stopped: the workers unready within %s", time.Since(stopped).Round(time.Millisecond))
	waitReadiness(t, procs, 200, "", "sweeper")
	b.smtp.Restart(t)
	back = time.Now()
	waitReady(t, procs, "worker")
	t.Logf("SMTP back: the workers ready within %s", time.Since(back).Round(time.Millisecond))

	appendLines(t, b.log, lines[9000:])
	time.Sleep(3 * time.Second) // a few sweeps and scrapes more
	w.finish()

	docs := documentedMetrics(t)
	for daemon, names := range docs {
		for _, name := range names {
			switch {
			case !w.served[daemon][name]:
				t.Errorf("%s: documented metric %s is not served", daemon, name)
			case !w.moved[daemon][name] && notMovedHere[name] == "":
				t.Errorf("%s: documented metric %s did not move", daemon, name)
			}
		}
		documented := map[string]bool{}
		for _, n := range names {
			documented[n] = true
		}
		var undocumented []string
		for name := range w.served[daemon] {
			if strings.HasPrefix(name, "pagewatch_") && !documented[name] {
				undocumented = append(undocumented, name)
			}
		}
		sort.Strings(undocumented)
		for _, n := range undocumented {
			t.Errorf("%s serves %s, which deploy/metrics.md does not document under \"## %s\"", daemon, n, daemon)
		}
	}
	var moved, total int
	for daemon, names := range docs {
		for _, n := range names {
			total++
			if w.moved[daemon][n] {
				moved++
			}
		}
	}
	t.Logf("%d of %d documented metric rows moved (%d exempt with a reason); %d mails", moved, total, len(notMovedHere), len(b.smtp.Messages()))
}

// waitReady waits until every process of the daemons answers /readyz 200.
func waitReady(t *testing.T, procs map[string][]*proc, daemons ...string) {
	t.Helper()
	waitReadiness(t, procs, http.StatusOK, "", daemons...)
}

// waitReadiness waits until every process of the daemons answers /readyz
// with code, its body naming dependency (when not "").
func waitReadiness(t *testing.T, procs map[string][]*proc, code int, dependency string, daemons ...string) {
	t.Helper()
	for _, d := range daemons {
		for _, p := range procs[d] {
			addr := p.adminAddr(t)
			testcheck.Eventually(t, 30*time.Second, fmt.Sprintf("%s's /readyz to answer %d naming %q", p.name, code, dependency), func() error {
				got, body := readyz(addr)
				if got == code && (dependency == "" || dependencyDown(body, dependency)) {
					return nil
				}
				return fmt.Errorf("%s: /readyz %d %q, want %d naming %q", p.name, got, body, code, dependency)
			})
		}
	}
}

// dependencyDown reports whether a /readyz body says dependency is not ok.
func dependencyDown(body, dependency string) bool {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, dependency+": "); ok {
			return v != "ok"
		}
	}
	return false
}

func readyz(addr string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitSample waits until a process serves metric{labels} (labels as
// "name=value,...", "" for none) with the value want.
func waitSample(t *testing.T, p *proc, metric, labels string, want float64) {
	t.Helper()
	addr := p.adminAddr(t)
	testcheck.Eventually(t, 30*time.Second, fmt.Sprintf("%s to serve %s{%s} = %v", p.name, metric, labels, want), func() error {
		fams, err := scrape(addr)
		got, ok := 0.0, false
		if err == nil {
			got, ok = fams[metric].series[labels]
		}
		if ok && got == want {
			return nil
		}
		return fmt.Errorf("%s: %s{%s} = %v (served %v, err %v), want %v", p.name, metric, labels, got, ok, err, want)
	})
}

// editConfig replaces each old string of the pairs with its new one,
// failing if one is missing.
func editConfig(t *testing.T, path string, pairs ...string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("config has no %q", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	writeFile(t, path, s)
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// sendSyslog sends each line as nginx does (access_log syslog:...,tag=nginx),
// plus one message with another tag and one that is not syslog at all.
func sendSyslog(t *testing.T, addr string, lines [][]byte) {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stamp := time.Now().Format(time.Stamp)
	send := func(msg string) {
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond) // paced: UDP drops what a full socket cannot take
	}
	for _, l := range lines {
		send(fmt.Sprintf("<190>%s web nginx: %s", stamp, l))
	}
	send(fmt.Sprintf("<190>%s web sshd: Accepted publickey for root", stamp))
	send("\x00not syslog")
}

// sendSyslogTCP sends lines newline-framed over one TCP connection, while
// a second connection is refused (max_tcp_connections: 1).
func sendSyslogTCP(t *testing.T, addr string, lines [][]byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stamp := time.Now().Format(time.Stamp)
	for _, l := range lines {
		if _, err := fmt.Fprintf(c, "<190>%s web nginx: %s\n", stamp, l); err != nil {
			t.Fatal(err)
		}
	}
	// The listener counts a refused connection when it accepts and closes it.
	if extra, err := net.Dial("tcp", addr); err == nil {
		buf := make([]byte, 1)
		_ = extra.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, _ = extra.Read(buf)
		extra.Close()
	}
	time.Sleep(500 * time.Millisecond) // the first connection's lines are read
}

// publishJunk puts a message no loader can decode on the hits stream.
func publishJunk(t *testing.T, url string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, "pagewatch.hits.junk.e2e", []byte("not a batch of hits"))
	if err != nil {
		t.Fatalf("publish junk: %v", err)
	}
	if strings.Contains(string(msg.Data), "error") {
		t.Fatalf("publish junk: %s", msg.Data)
	}
}

// forgetRetentionClaims deletes the loaders' retention claims, so that the
// next loader to start runs retention as in a new period.
func forgetRetentionClaims(t *testing.T, b *bundle) {
	t.Helper()
	bb := b.hitsBus(t)
	kv, err := bb.KV(context.Background(), bus.BucketRetention, retention.ClaimsTTL)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		if err := kv.Purge(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
}
