package console

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/pipeline/sweep/sweepstatus"
	"github.com/pagewatch/pagewatch/pipeline/tail"
	"github.com/pagewatch/pagewatch/pipeline/tail/tailstatus"
)

// pipelineState makes real NATS state for the pipeline page: a tailer
// following a file (a hostile name, and an incomplete last line of
// behind bytes), the record of a tailer gone silent, a failed sweep,
// jobs waiting on the workers' consumer and a crossing held for quiet
// hours. It returns the bus, the file's path and its bytes behind.
func pipelineState(t *testing.T) (*bus.Bus, string, int) {
	t.Helper()
	ctx := context.Background()
	b := connect(t, natstest.Start(t))
	dir := t.TempDir()
	path := filepath.Join(dir, `access<b>"x".log`)
	partial := `10.0.0.1 - - [24/Nov/2026:12:00:00 +0000] "GET /half`
	line := `10.0.0.1 - - [24/Nov/2026:12:00:00 +0000] "GET /pricing HTTP/1.1" 200 512 "-" "Mozilla/5.0"` + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 20)+partial), 0o644); err != nil {
		t.Fatal(err)
	}
	tc := tail.DefaultConfig()
	tc.Instance = "web1"
	tc.StartAt = "beginning"
	tc.PollInterval = 10 * time.Millisecond
	tc.Inputs = []tail.Input{{Path: path, Site: "example.com"}}
	tl, err := tail.New(tc, tail.Deps{Bus: b, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()}, tail.WithHeartbeat(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tl.Run(tctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// A tailer whose last heartbeat is a minute old.
	kv, err := b.KV(ctx, tailstatus.Bucket, 6*200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	old := tailstatus.Tailer{Instance: "web2", Host: "gone-host", Interval: tailstatus.Interval,
		Started: time.Now().Add(-time.Hour), At: time.Now().Add(-time.Minute),
		Inputs: []tailstatus.Input{{Kind: tailstatus.KindFile, Name: "/var/log/nginx/access.log", Size: 5000, Offset: 4000, Behind: 1000, LastPublish: time.Now().Add(-2 * time.Minute)}}}
	body, _ := json.Marshal(old)
	// Rewritten until the test ends: the bucket's TTL is short.
	stopOld := make(chan struct{})
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			_, _ = kv.Put(ctx, tailstatus.Key("web2", "gone-host"), body)
			select {
			case <-stopOld:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(stopOld) })

	if err := sweepstatus.Write(ctx, b, sweepstatus.Sweep{Owner: "sweeper-1/42", Started: time.Now().Add(-20 * time.Second), Took: 1500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := sweepstatus.Write(ctx, b, sweepstatus.Sweep{Owner: "sweeper-1/42", Started: time.Now().Add(-5 * time.Second), Took: 3 * time.Second, Error: "clickhouse: <timeout>"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.JobsStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if _, err := b.JS.Publish(ctx, b.JobsSubject(k), []byte(`{"key":"`+k+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	held, err := b.KV(ctx, bus.BucketHeld, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Put(ctx, "slack."+bus.Key("pricing.k.1"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	return b, path, len(partial)
}

// TestPipelinePageOperator: the pipeline page, read from real NATS
// state, lists the tailed file by its path (escaped) with its size and
// bytes behind, flags the silent tailer and its file, says the last
// sweep failed and how many jobs wait, with the thresholds stated.
func TestPipelinePageOperator(t *testing.T) {
	b, path, behind := pipelineState(t)
	bd := setup(t, nil, func(d *Deps) { d.Pipeline = NewNATS(b); d.Now = time.Now })
	alice, _, _ := bd.login(t, "alice", "pw-alice") //nolint:bodyclose // login reads and closes it
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body = get(t, alice, bd.srv.URL+"/pipeline") //nolint:bodyclose // get reads and closes it
		if strings.Contains(body, ">"+bytesShown(int64(behind))+"<") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	escaped := strings.NewReplacer("<", "&lt;", ">", "&gt;", `"`, "&#34;").Replace(path)
	for _, want := range []string{
		`<td class="path">` + escaped + `</td>`,
		`data-testid="behind">` + bytesShown(int64(behind)) + `<`,
		"/var/log/nginx/access.log",
		`data-testid="tailer" data-level="bad"`,
		`<td>silent</td>`,
		`data-testid="answer" data-level="bad"><div class="muted">Is any tailer silent?</div><div class="v">yes: 1 of 2</div>`,
		"failed: clickhouse: &lt;timeout&gt;; last good sweep 20s ago",
		`<div class="v">3 jobs waiting, 0 being processed</div>`,
		`<td>slack</td><td class="num">1</td>`,
		"older than 3 heartbeat intervals",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/pipeline lacks %q", want)
		}
	}
	if strings.Contains(body, `<b>"x"`) {
		t.Error("/pipeline shows the file's name unescaped")
	}
	// The silent tailer's file is flagged; the live one is not.
	rows := regexp.MustCompile(`(?s)<tr data-testid="tailed" data-level="(\w+)">.*?</tr>`).FindAllStringSubmatch(body, -1)
	levels := map[string]string{}
	for _, r := range rows {
		name := "live"
		if strings.Contains(r[0], "/var/log/nginx/access.log") {
			name = "silent"
		}
		levels[name] = r[1]
	}
	if levels["live"] != levelOK || levels["silent"] != levelBad {
		t.Errorf("tailed files' levels %v, want the live one ok and the silent one bad", levels)
	}
	if t.Failed() {
		t.Logf("page:\n%s", body)
	}
}
