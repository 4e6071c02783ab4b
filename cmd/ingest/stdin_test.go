package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

// runWithStdin runs the ingest command line with data on standard input
// (a real pipe, as Apache gives it) and returns its exit code and stderr.
func runWithStdin(t *testing.T, data []byte, args ...string) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	saved := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = saved }()
	go func() {
		_, _ = w.Write(data) // a short write shows as missing lines below
		w.Close()
	}()
	var stdout, stderr bytes.Buffer
	code := daemon.Main(context.Background(), program, args, &stdout, &stderr, nil)
	return code, stderr.String()
}

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pagewatch.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Apache's piped logger: `ingest tail --stdin` with no file in the config
// publishes every line it is given (page filters off: 10,000 hits) and
// exits 0 when the pipe closes.
func TestTailStdinCommand(t *testing.T) {
	lines := realdata.Lines(t, realdata.ApacheLog)
	ns := natstest.Start(t)
	cfg := writeConfig(t, "nats: {url: '"+ns.URL+"'}\ningest:\n  tail:\n    instance: cmdtest\n"+
		"    stdin: {site: example.com}\n"+
		"    pages: {methods: [], statuses: [], static_extensions: [], bots: []}\n")
	data := append(bytes.Join(lines, []byte("\n")), '\n')
	code, stderr := runWithStdin(t, data, "tail", "--stdin", "--config", cfg)
	if code != daemon.ExitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}

	bcfg := bus.DefaultConfig()
	bcfg.URL = ns.URL
	b, err := bus.Connect(context.Background(), bcfg, "test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := b.JS.Stream(context.Background(), b.HitsStreamName())
	if err != nil {
		t.Fatal(err)
	}
	subject := b.HitsSubject("cmdtest", bus.Key("stdin"))
	var hits []hit.Hit
	for seq := uint64(1); ; {
		m, err := s.GetMsg(context.Background(), seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seq = m.Sequence + 1
		if hits, err = hit.Decode(m.Data, hits); err != nil {
			t.Fatal(err)
		}
	}
	if len(hits) != len(lines) || len(lines) != 10_000 {
		t.Fatalf("%d hits of %d lines, want 10,000", len(hits), len(lines))
	}
}

// A stdin section left at its defaults names no site: a usage error
// (exit 2) naming the key, before anything is read.
func TestTailStdinNeedsASite(t *testing.T) {
	cfg := writeConfig(t, "ingest:\n  tail:\n    inputs: [{path: /var/log/a.log, site: example.com}]\n")
	code, stderr := runWithStdin(t, nil, "tail", "--stdin", "--config", cfg)
	if code != daemon.ExitUsage || !strings.Contains(stderr, "ingest.tail.stdin.site: must be set") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	code, stderr = runWithStdin(t, nil, "tail", "--stdin", "--from-start", "--config", cfg)
	if code != daemon.ExitUsage || !strings.Contains(stderr, "--stdin cannot be given with --from-start") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
}
