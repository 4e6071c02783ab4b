package e2e

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/realdata"
)

// In the real log "/" has 155 page views by the default filters (575
// lines) and "/blog/tags/puppet" none (its 489 lines are feed readers).
const rules = `    - {name: home-milestone, site: example.com, path: /, threshold: 150, window: all, notify: {recipients: [ops@example.com]}}
    - {name: puppet-milestone, site: example.com, path: /blog/tags/puppet, threshold: 500, window: all, notify: {recipients: [ops@example.com]}}
    - {name: pricing-hourly, site: example.com, path: /pricing, threshold: 40, window: 1h, notify: {recipients: [sales@example.com, ops@example.com]}}`

// freshLines are n hits on /pricing stamped now, so the rolling rule sees them.
func freshLines(n int) [][]byte {
	now := time.Now().UTC().Format("02/Jan/2006:15:04:05 +0000")
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, `203.0.113.%d - - [%s] "GET /pricing?utm=%d HTTP/1.1" 200 5120 "https://search.example/?q=<script>" "Mozilla/5.0 (X11; Linux x86_64)"`, i%250, now, i)
	}
	return out
}

// TestLogLineBecomesEmail is the walking skeleton: real log lines appended
// to a file reach ClickHouse with exact counts, and each crossing produces
// exactly one email at the SMTP server.
func TestLogLineBecomesEmail(t *testing.T) {
	// The filters users get by default: 1,876 of the 10,000 real lines
	// are page views (4,233 pass the filters, and the bots' 2,357 of them
	// are published but not counted), and the 50 fresh ones are.
	b := setupWith(t, setupOptions{rules: rules, pages: "{}", load: defaultLoad, worker: defaultWorker})
	lines := realdata.Lines(t, realdata.ApacheLog)
	b.start(t, "ingest", "load")
	b.start(t, "ingest", "tail")
	b.start(t, "sweeper")
	b.start(t, "worker")

	appendLines(t, b.log, lines[:5000])
	appendLines(t, b.log, freshLines(50))
	appendLines(t, b.log, lines[5000:])
	b.waitHits(t, 1876+50, 60*time.Second)

	msgs := b.smtp.WaitForMessages(t, 2, 30*time.Second)
	time.Sleep(3 * time.Second) // three more sweeps: nothing new may fire
	if got := len(b.smtp.Messages()); got != 2 {
		t.Fatalf("got %d emails, want 2 (home-milestone and pricing-hourly)", got)
	}
	subjects := []string{}
	for _, m := range msgs {
		for _, line := range strings.Split(string(m.Data), "\r\n") {
			if strings.HasPrefix(line, "Subject: ") {
				subjects = append(subjects, line)
			}
		}
	}
	joined := strings.Join(subjects, "\n")
	if !strings.Contains(joined, "[pagewatch] / passed 150 views") || !strings.Contains(joined, "[pagewatch] /pricing passed 40 views in 1h") {
		t.Fatalf("subjects:\n%s", joined)
	}
	// A crossing records the count the sweep saw, which may be before the
	// last lines were loaded: above the threshold, at most the final count.
	got := b.ch.Query(t, "SELECT rule, hits > threshold AND hits <= if(rule = 'home-milestone', 155, 50) FROM pagewatch.crossings FINAL ORDER BY rule")
	if got != "home-milestone\t1\npricing-hourly\t1\n" {
		t.Fatalf("crossings history (rule, count in range):\n%s\n%s", got, b.ch.Query(t, "SELECT rule, threshold, hits FROM pagewatch.crossings FINAL ORDER BY rule"))
	}
	if got := b.ch.Query(t, "SELECT count() FROM pagewatch.notifications WHERE outcome = 'sent'"); got != "2\n" {
		t.Fatalf("sent notifications: %s", got)
	}
}

// TestKill9IngestMidStream SIGKILLs the tailer and the loader at random
// moments while lines are being appended, restarts them, and requires
// rows in ClickHouse to equal lines appended: no loss, no double count.
func TestKill9IngestMidStream(t *testing.T) {
	b := setup(t, "    []")
	lines := realdata.Lines(t, realdata.ApacheLog)
	tailer := b.start(t, "ingest", "tail")
	loader := b.start(t, "ingest", "load")

	const rounds = 3 // the real log, three times over: 30,000 lines
	written := 0
	kills := 0
	rng := rand.New(rand.NewPCG(1, 2))
	for r := 0; r < rounds; r++ {
		for off := 0; off < len(lines); {
			n := min(200+rng.IntN(800), len(lines)-off)
			appendLines(t, b.log, lines[off:off+n])
			off += n
			written += n
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			switch rng.IntN(5) {
			case 0:
				tailer.kill()
				kills++
				tailer = b.start(t, "ingest", "tail")
			case 1:
				loader.kill()
				kills++
				loader = b.start(t, "ingest", "load")
			}
		}
	}
	b.waitHits(t, written, 90*time.Second)
	time.Sleep(time.Second) // nothing more may arrive
	if got := b.hitCount(t); got != written {
		t.Fatalf("after settling: %d hits for %d lines", got, written)
	}
	pages := b.ch.Query(t, "SELECT sum(h) FROM (SELECT any(hits) AS h FROM pagewatch.page_minutes GROUP BY site, path, minute, seq)")
	if strings.TrimSpace(pages) != fmt.Sprint(written) {
		t.Fatalf("per-minute counts sum to %s, want %d", pages, written)
	}
	t.Logf("%d lines appended, %d SIGKILLs of ingest tail/load, %d distinct hits in ClickHouse, per-minute counts sum to %s", written, kills, written, strings.TrimSpace(pages))
}
