package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// Rotation under kills: a writer appends real lines at 20k+ lines/s, each
// carrying a unique id in its referer ("http://w/<id>"), while the test
// rotates the file (rename and reopen, or copytruncate's copy then
// truncate) and SIGKILLs `ingest tail` over and over. At the end every id
// that is in one of the files must be in ClickHouse exactly once, and in
// the stream once; ids written but in no file (copytruncate's window
// between copy and truncate) are reported apart.

// idWriter appends real lines with unique ids to a log, through one
// O_APPEND descriptor it reopens when told (a web server's USR1).
type idWriter struct {
	path      string
	templates [][2]string // each real line, cut where its referer goes
	mu        sync.Mutex  // holds f across a write and a reopen
	f         *os.File
	next      atomic.Int64 // ids written: 0..next-1
}

func newIDWriter(t *testing.T, path string) *idWriter {
	t.Helper()
	w := &idWriter{path: path}
	for _, l := range realdata.Lines(t, realdata.ApacheLog) {
		// host ident user [time] "request" status bytes "referer" "agent"
		parts := strings.Split(string(l), `"`)
		if len(parts) != 7 {
			continue // a quote inside a field: keep the cutting simple
		}
		w.templates = append(w.templates, [2]string{
			strings.Join(parts[:3], `"`) + `"`,
			`"` + strings.Join(parts[4:], `"`) + "\n",
		})
	}
	if len(w.templates) < 1000 {
		t.Fatalf("only %d usable lines in the real log", len(w.templates))
	}
	w.reopen(t)
	t.Cleanup(func() { w.f.Close() })
	return w
}

// reopen opens the path again, as a server does on its reopen signal.
func (w *idWriter) reopen(t *testing.T) {
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	w.mu.Lock()
	old := w.f
	w.f = f
	w.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// run writes about rate lines/s, 100 lines per write, until ctx is done.
func (w *idWriter) run(ctx context.Context, rate int) error {
	const per = 100
	began := time.Now()
	var buf []byte
	for ctx.Err() == nil {
		buf = buf[:0]
		first := w.next.Load()
		for i := range int64(per) {
			id := first + i
			tpl := w.templates[id%int64(len(w.templates))]
			buf = append(buf, tpl[0]...)
			buf = append(buf, "http://w/"...)
			buf = strconv.AppendInt(buf, id, 10)
			buf = append(buf, tpl[1]...)
		}
		w.mu.Lock()
		_, err := w.f.Write(buf)
		w.mu.Unlock()
		if err != nil {
			return err
		}
		w.next.Add(per)
		if ahead := time.Duration(float64(first+per)/float64(rate)*float64(time.Second)) - time.Since(began); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	return nil
}

// idsInFiles reads every id in the log and its rotated files (.N, .N.gz),
// and names the file each is in.
func idsInFiles(t *testing.T, path string) (map[int64]int, map[int64]string) {
	t.Helper()
	out := map[int64]int{}
	where := map[int64]string{}
	names, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		for _, line := range bytes.Split(data, []byte{'\n'}) {
			if id, ok := lineID(line); ok {
				out[id]++
				where[id] = filepath.Base(name)
			}
		}
	}
	return out, where
}

// lineID is the id in a line's referer.
func lineID(line []byte) (int64, bool) {
	i := bytes.Index(line, []byte(`"http://w/`))
	if i < 0 {
		return 0, false
	}
	rest := line[i+len(`"http://w/`):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return id, err == nil
}

// streamIDs counts, over every message of the hits stream, how many
// times each id was published.
func (b *bundle) streamIDs(t *testing.T) (ids map[int64]int, msgs int) {
	t.Helper()
	bb := b.hitsBus(t)
	s := b.hitsStream(t, bb.HitsStreamName())
	ctx := context.Background()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids = map[int64]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		msgs++
		hs, err := hit.Decode(m.Data, nil)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		for _, h := range hs {
			if id, ok := lineID([]byte(`"` + h.Referer + `"`)); ok {
				ids[id]++
			}
		}
	}
	return ids, msgs
}

// clickhouseIDs counts each id's distinct hits in ClickHouse, as the
// counts see them (one per hits key).
func (b *bundle) clickhouseIDs(t *testing.T) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	rows := strings.TrimSpace(b.ch.Query(t, `SELECT referer, count() FROM (SELECT DISTINCT seq, line_offset, referer FROM pagewatch.hits) GROUP BY referer`))
	if rows == "" {
		return out
	}
	for _, line := range strings.Split(rows, "\n") {
		ref, n, _ := strings.Cut(line, "\t")
		id, ok := lineID([]byte(`"` + ref + `"`))
		if !ok {
			t.Fatalf("hit with referer %q", ref)
		}
		c, err := strconv.Atoi(n)
		if err != nil {
			t.Fatal(err)
		}
		out[id] += c
	}
	return out
}

type rotation int

const (
	renameReopen rotation = iota
	copyTruncate
)

// rotationRun is one test's plan.
type rotationRun struct {
	kind      rotation
	every     time.Duration // between rotations
	killMin   time.Duration // between kills of the tailer
	killMax   time.Duration
	kills     int
	compress  bool // gzip each rotation one rotation later (delaycompress)
	writeRate int  // lines/s
	// grace is ingest.tail.rotate_grace; "" keeps the default (5s), longer
	// than the time between rotations.
	grace string
}

func runRotation(t *testing.T, plan rotationRun) {
	began := time.Now()
	b := setupLoad(t, "    []", bigLoad)
	if plan.grace != "" {
		cfg, err := os.ReadFile(b.config)
		if err != nil {
			t.Fatal(err)
		}
		cfg = bytes.Replace(cfg, []byte("    poll_interval: 20ms\n"), []byte("    poll_interval: 20ms\n    rotate_grace: "+plan.grace+"\n"), 1)
		if err := os.WriteFile(b.config, cfg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := newIDWriter(t, b.log)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 14))
	t.Logf("seed %d", seed)

	loader := b.start(t, "ingest", "load")
	tailer := b.start(t, "ingest", "tail")
	ctx, cancel := context.WithCancel(context.Background())
	wrote := make(chan error, 1)
	writeBegan := time.Now()
	go func() { wrote <- w.run(ctx, plan.writeRate) }()

	// Rotations on their own clock.
	rotations := 0
	rotDone := make(chan struct{})
	stopRot := make(chan struct{})
	go func() {
		defer close(rotDone)
		tick := time.NewTicker(plan.every)
		defer tick.Stop()
		for {
			select {
			case <-stopRot:
				return
			case <-tick.C:
			}
			rotations++
			if plan.compress {
				// delaycompress: the previous rotation is compressed now.
				if _, err := os.Stat(b.log + ".1"); err == nil {
					gzipTo(t, b.log+".1", b.log+".1.gz")
				}
			}
			shiftRotatedAll(t, b.log)
			switch plan.kind {
			case renameReopen:
				if err := os.Rename(b.log, b.log+".1"); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond) // the server gets its signal
				w.reopen(t)
			case copyTruncate:
				data, err := os.ReadFile(b.log)
				if err != nil {
					t.Error(err)
					return
				}
				// The copy ends at a line's end: a web server writes whole lines.
				data = data[:bytes.LastIndexByte(data, '\n')+1]
				if err := os.WriteFile(b.log+".1", data, 0o644); err != nil {
					t.Error(err)
					return
				}
				if err := os.Truncate(b.log, 0); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()

	kills := 0
	for kills < plan.kills {
		time.Sleep(plan.killMin + time.Duration(rng.Int64N(int64(plan.killMax-plan.killMin))))
		tailer.kill()
		kills++
		tailer = b.start(t, "ingest", "tail")
	}
	close(stopRot)
	<-rotDone
	cancel()
	if err := <-wrote; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	written := w.next.Load()
	writing := time.Since(writeBegan)
	inFiles, where := idsInFiles(t, b.log)
	for id, n := range inFiles {
		if n != 1 {
			t.Fatalf("id %d is %d times in the files: the test's rotation is wrong", id, n)
		}
	}
	want := len(inFiles)
	t.Logf("%d lines written in %s (%.0f lines/s), %d rotations, tailer SIGKILLed %d times; %d lines in the files, %d in none (copy-to-truncate windows, %.1f per rotation)",
		written, writing.Round(time.Millisecond), float64(written)/writing.Seconds(), rotations, kills, want, int(written)-want, float64(int(written)-want)/float64(max(rotations, 1)))

	missingFrom := func(ids map[int64]int) (n int, some []int64) {
		for id := range inFiles {
			if ids[id] == 0 {
				if n++; len(some) < 10 {
					some = append(some, id)
				}
			}
		}
		return n, some
	}
	var got map[int64]int
	if !testcheck.Poll(60*time.Second, func() bool {
		got = b.clickhouseIDs(t)
		n, _ := missingFrom(got)
		return n == 0
	}) {
		n, _ := missingFrom(got)
		sids, _ := b.streamIDs(t)
		ns, some := missingFrom(sids)
		perFile, missingPer := map[string]int{}, map[string]int{}
		for id := range inFiles {
			perFile[where[id]]++
			if sids[id] == 0 {
				missingPer[where[id]]++
			}
		}
		for name, n := range perFile {
			head := ""
			if data, err := os.ReadFile(filepath.Join(b.dir, name)); err == nil {
				head = string(data[:min(len(data), 120)])
			}
			t.Logf("%s: %d lines, %d not in the stream; head %q", name, n, missingPer[name], head)
		}
		// The daemons' logs go with the temporary directory; this keeps
		// them for a look at what the tailer did.
		if keep := os.Getenv("PAGEWATCH_KEEP_LOGS"); keep != "" {
			logs, _ := filepath.Glob(filepath.Join(b.dir, "*.log"))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				_ = os.WriteFile(filepath.Join(keep, filepath.Base(l)), data, 0o644)
			}
		}
		t.Fatalf("%d of %d lines in the files are not in ClickHouse; %d of them not in the stream either, e.g. ids %v", n, want, ns, some)
	}
	time.Sleep(time.Second) // nothing more may arrive
	alive(t, tailer)
	alive(t, loader)
	got = b.clickhouseIDs(t)
	var twice, extra []int64
	for id, n := range got {
		if n > 1 {
			twice = append(twice, id)
		}
		if inFiles[id] == 0 {
			extra = append(extra, id)
		}
	}
	sort.Slice(twice, func(i, j int) bool { return twice[i] < twice[j] })
	if len(twice) > 0 {
		t.Errorf("%d lines counted more than once in ClickHouse, e.g. ids %v", len(twice), twice[:min(10, len(twice))])
	}
	// Lines of a copy-to-truncate window the tailer read before the
	// truncate: not in any file, but read, and counted once.
	t.Logf("ClickHouse: %d distinct lines, %d of them from copy-to-truncate windows (read before the truncate)", len(got), len(extra))

	sids, msgs := b.streamIDs(t)
	var pubTwice []int64
	for id, n := range sids {
		if n > 1 {
			pubTwice = append(pubTwice, id)
		}
	}
	sort.Slice(pubTwice, func(i, j int) bool { return pubTwice[i] < pubTwice[j] })
	if len(pubTwice) > 0 {
		t.Errorf("%d lines published more than once in the stream, e.g. ids %v", len(pubTwice), pubTwice[:min(10, len(pubTwice))])
	}
	minutes := b.count(t, "SELECT sum(h) FROM (SELECT any(hits) AS h FROM pagewatch.page_minutes GROUP BY site, path, minute, seq)")
	if minutes != len(got) {
		t.Errorf("per-minute counts sum to %d, ClickHouse holds %d distinct lines", minutes, len(got))
	}
	t.Logf("stream: %d messages, %d distinct lines; per-minute counts sum to %d; test took %s", msgs, len(sids), minutes, time.Since(began).Round(time.Millisecond))
}

// shiftRotatedAll shifts path.N and path.N.gz.
func shiftRotatedAll(t *testing.T, path string) {
	t.Helper()
	n := 0
	for {
		_, e1 := os.Stat(path + "." + strconv.Itoa(n+1))
		_, e2 := os.Stat(path + "." + strconv.Itoa(n+1) + ".gz")
		if e1 != nil && e2 != nil {
			break
		}
		n++
	}
	for i := n; i >= 1; i-- {
		for _, ext := range []string{"", ".gz"} {
			from := path + "." + strconv.Itoa(i) + ext
			if _, err := os.Stat(from); err == nil {
				if err := os.Rename(from, path+"."+strconv.Itoa(i+1)+ext); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// gzipTo compresses src into dst and removes src, keeping its mtime.
func gzipTo(t *testing.T, src, dst string) {
	data, err := os.ReadFile(src)
	if err != nil {
		t.Error(err)
		return
	}
	st, err := os.Stat(src)
	if err != nil {
		t.Error(err)
		return
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Error(err)
		return
	}
	if err := zw.Close(); err != nil {
		t.Error(err)
		return
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Error(err)
		return
	}
	_ = os.Chtimes(dst, st.ModTime(), st.ModTime())
	_ = os.Remove(src)
}

// TestTailRenameRotationUnderKills: rename rotation every second (the
// writer reopening within 50 ms, as on USR1), the tailer SIGKILLed every
// 0.3 to 2 s, 20 times: exact in ClickHouse, and no line published twice.
func TestTailRenameRotationUnderKills(t *testing.T) {
	for _, grace := range []string{"", "300ms"} {
		t.Run("rotate_grace="+map[string]string{"": "default"}[grace]+grace, func(t *testing.T) {
			runRotation(t, rotationRun{kind: renameReopen, every: time.Second, killMin: 300 * time.Millisecond, killMax: 2 * time.Second, kills: 20, writeRate: 20000, grace: grace})
		})
	}
}

// TestTailCopytruncateUnderKills: copytruncate every 2 s (the copy, then
// the truncate, the writer appending with O_APPEND throughout), the
// tailer SIGKILLed 20 times: every line in the files once in ClickHouse.
func TestTailCopytruncateUnderKills(t *testing.T) {
	runRotation(t, rotationRun{kind: copyTruncate, every: 2 * time.Second, killMin: 300 * time.Millisecond, killMax: 2 * time.Second, kills: 20, writeRate: 20000})
}

// TestTailCopytruncateCompressedUnderKills is the same with delaycompress.
func TestTailCopytruncateCompressedUnderKills(t *testing.T) {
	runRotation(t, rotationRun{kind: copyTruncate, every: 2 * time.Second, killMin: 300 * time.Millisecond, killMax: 2 * time.Second, kills: 20, compress: true, writeRate: 20000})
}
