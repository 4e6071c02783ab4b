package tail_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/syncbuf"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// file names a log's whole content (decompressed), so that hits can be
// traced back to the line they came from.
type file struct {
	name    string
	content []byte
}

// readLog reads a log as the tailer sees its content: plain, or gunzipped.
func readLog(t testing.TB, path string) file {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return file{name: filepath.Base(path), content: data}
}

// exactly checks that the stream holds every line of files once and
// nothing else: each hit is traced, by its message's file fingerprint and
// its offset, to the start of a line of one of files, and no line is
// published twice, whatever subject it went out on.
func (b *bundle) exactly(t testing.TB, want int, files ...file) {
	t.Helper()
	b.published(t) // byte ranges contiguous per subject
	starts := make([]map[uint64]bool, len(files))
	total := 0
	for i, f := range files {
		m := map[uint64]bool{}
		for off := 0; off < len(f.content); {
			m[uint64(off)] = false
			i := bytes.IndexByte(f.content[off:], '\n')
			if i < 0 {
				break
			}
			off += i + 1
		}
		starts[i] = m
		total += len(m)
	}
	if total != want {
		t.Fatalf("test files hold %d lines, test expects %d", total, want)
	}
	ctx := context.Background()
	s, err := b.bus.JS.Stream(ctx, b.bus.HitsStreamName())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		hs, err := hit.Decode(m.Data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) == 0 {
			continue
		}
		i := fileOf(t, files, m.Header.Get(tail.HeaderFile))
		name := files[i].name
		for _, h := range hs {
			seen, ok := starts[i][h.Offset]
			switch {
			case !ok:
				t.Fatalf("message %d (%s): hit at offset %d is no line start of %s", seq, m.Subject, h.Offset, name)
			case seen:
				t.Fatalf("message %d (%s): line at offset %d of %s published twice", seq, m.Subject, h.Offset, name)
			}
			starts[i][h.Offset] = true
			got++
		}
	}
	if got != want {
		for i, f := range files {
			missing := 0
			for _, seen := range starts[i] {
				if !seen {
					missing++
				}
			}
			t.Logf("%s: %d of %d lines missing", f.name, missing, len(starts[i]))
		}
		t.Fatalf("stream holds %d hits, want %d", got, want)
	}
}

// fileOf finds the file a Pagewatch-File header describes by its head
// fingerprint (dev:ino:len:hash), which is what survives compression.
func fileOf(t testing.TB, files []file, header string) int {
	t.Helper()
	var dev, ino uint64
	var n int
	var fp string
	if _, err := fmt.Sscanf(strings.ReplaceAll(header, ":", " "), "%d %d %d %s", &dev, &ino, &n, &fp); err != nil {
		t.Fatalf("file header %q: %v", header, err)
	}
	for i, f := range files {
		if n <= len(f.content) {
			sum := sha256.Sum256(f.content[:n])
			if hex.EncodeToString(sum[:8]) == fp {
				return i
			}
		}
	}
	t.Fatalf("file header %q matches none of the test's files", header)
	return -1
}

func writeLines(t testing.TB, path string, lines [][]byte, lastNewline bool) {
	t.Helper()
	var buf bytes.Buffer
	for i, l := range lines {
		buf.Write(l)
		if i < len(lines)-1 || lastNewline {
			buf.WriteByte('\n')
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// gzipFile compresses src into dst and removes src, keeping its mtime,
// as gzip(1) does.
func gzipFile(t testing.TB, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(src); err != nil {
		t.Fatal(err)
	}
}

func setMtime(t testing.TB, path string, ago time.Duration) {
	t.Helper()
	at := time.Now().Add(-ago)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func rename(t testing.TB, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// captureLogs makes the bundle's tailers log at level into the returned
// buffer, and to the test's output.
func (b *bundle) captureLogs(t testing.TB, level slog.Level) *syncbuf.Buffer {
	var buf syncbuf.Buffer
	b.logger = slog.New(slog.NewTextHandler(io.MultiWriter(&buf, t.Output()), &slog.HandlerOptions{Level: level}))
	return &buf
}

// runBackfill runs a --backfill-only tailer to its end (or until ctx is
// done) and returns its error.
func (b *bundle) runBackfill(ctx context.Context, t testing.TB, reg prometheus.Registerer, opts tail.BackfillOptions) error {
	t.Helper()
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	tl, err := tail.New(b.cfg, tail.Deps{Bus: b.bus, Logger: b.logger, Registry: reg}, tail.WithBackfill(opts))
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tl.Run(ctx)
}

// lastSeq is the hits stream's last sequence.
func (b *bundle) lastSeq(t testing.TB) uint64 {
	t.Helper()
	s, err := b.bus.JS.Stream(context.Background(), b.bus.HitsStreamName())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// metric returns the value of the gauge or counter name{file=path}
// (hasLabel is pages_test.go's).
func metric(t testing.TB, g prometheus.Gatherer, name, path string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabel(m, "file", path) {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s{file=%q} not found", name, path)
	return 0
}
