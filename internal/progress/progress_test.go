package progress

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

const mib = 1 << 20

// fakeClock is safe to read from Run's goroutine while a test moves it.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration // added after every read, for tests that let Run tick
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = c.t.Add(c.step)
	return t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// frame draws once and returns what was written since the last call.
func frame(d *Display, buf *bytes.Buffer) string {
	d.draw()
	s := buf.String()
	buf.Reset()
	return s
}

func TestTerminalGolden(t *testing.T) {
	clock := newClock()
	var buf bytes.Buffer
	d := New(&buf, Options{Total: 100 * mib, Terminal: TerminalOn, Width: 80, Now: clock.Now})
	d.SetFile("/var/log/nginx/access.log")

	d.Add(10*mib, 100_000)
	clock.Advance(time.Second)
	// 10 MiB/s with 90 MiB to go: 9 s. The line is 79 columns, the file
	// name cut from the front to fit.
	want := "\r 10.0% 10.0 MiB/100 MiB 10.0 MiB/s 100k lines 100k/s ETA 0:00:09 …nx/access.log\x1b[K"
	if got := frame(d, &buf); got != want {
		t.Fatalf("frame 1:\n got %q\nwant %q", got, want)
	}

	d.Add(5*mib, 50_000)
	clock.Advance(time.Second)
	// The EWMA weighs the older second by e^-0.2: (10·0.819 + 5)/1.819 =
	// 7.25 MiB/s, so 85 MiB take 11.7 s.
	want = "\r 15.0% 15.0 MiB/100 MiB 7.25 MiB/s 150k lines 72.5k/s ETA 0:00:12 …x/access.log\x1b[K"
	if got := frame(d, &buf); got != want {
		t.Fatalf("frame 2:\n got %q\nwant %q", got, want)
	}

	clock.Advance(time.Second)
	d.Done()
	want = "\rdone: 15.0 MiB of 100 MiB (15.0%), 150,000 lines in 0:00:03 (5.00 MiB/s, 50,000 lines/s)\x1b[K\n"
	if got := buf.String(); got != want {
		t.Fatalf("summary:\n got %q\nwant %q", got, want)
	}
	buf.Reset()
	d.Done()
	if d.draw(); buf.Len() != 0 {
		t.Fatalf("wrote after Done: %q", buf.String())
	}
}

func TestUnknownTotal(t *testing.T) {
	clock := newClock()
	var buf bytes.Buffer
	d := New(&buf, Options{Terminal: TerminalOn, Width: 80, Now: clock.Now})
	if got, want := frame(d, &buf), "\r0 B ?/s 0 lines ?/s ETA ?\x1b[K"; got != want {
		t.Fatalf("before any time passed:\n got %q\nwant %q", got, want)
	}
	d.Add(1536, 12)
	clock.Advance(2 * time.Second)
	if got, want := frame(d, &buf), "\r1.50 KiB 768 B/s 12 lines 6/s ETA ?\x1b[K"; got != want {
		t.Fatalf("unknown total:\n got %q\nwant %q", got, want)
	}
	// A file is found: the total is known from now on. The last 2 s ran
	// at 256 B/s after 768 B/s; weighted 1 : e^-0.4 that is 461 B/s, and
	// the 1 KiB left takes 2.2 s.
	d.AddTotal(3072)
	d.Add(512, 4)
	clock.Advance(2 * time.Second)
	want := "\r 66.7% 2.00 KiB/3.00 KiB 461 B/s 16 lines 3/s ETA 0:00:02\x1b[K"
	if got := frame(d, &buf); got != want {
		t.Fatalf("total added:\n got %q\nwant %q", got, want)
	}
	// Reading past the total (a file that grew) caps the line at 100%.
	d.Add(2048, 1)
	clock.Advance(time.Second)
	if got := frame(d, &buf); !strings.HasPrefix(got, "\r100.0% 4.00 KiB/4.00 KiB ") || !strings.Contains(got, "ETA 0:00:00") {
		t.Fatalf("past the total: %q", got)
	}
}

func TestRateFollowsChangesAndETA(t *testing.T) {
	var e ewma
	if _, ok := e.value(); ok {
		t.Fatal("rate known before any sample")
	}
	// Uneven intervals at a constant rate give that rate exactly.
	for _, ms := range []int{200, 10, 1000, 350, 5000} {
		e.observe(1000, time.Duration(ms)*time.Millisecond)
	}
	if r, _ := e.value(); r < 999.999 || r > 1000.001 {
		t.Fatalf("constant rate: %v", r)
	}
	// After a stop the rate decays with the window's time constant: one
	// window later about e^-1 of it is left. (A long steady run first, so
	// the weight has reached 1 and the correction for it drops out.)
	for range 60 {
		e.observe(1000, time.Second)
	}
	for range 25 {
		e.observe(0, 200*time.Millisecond)
	}
	if r, _ := e.value(); r < 367 || r > 369 {
		t.Fatalf("one window after a stop: %v, want ~367.9", r)
	}

	for _, c := range []struct {
		s    status
		want string
	}{
		{status{total: 100, bytes: 40, byteRate: 20, rated: true}, "0:00:03"},
		{status{total: 3600 * 10, bytes: 0, byteRate: 3, rated: true}, "3:20:00"},
		{status{total: 100, bytes: 100, rated: true}, "0:00:00"},
		{status{total: 100, bytes: 40, byteRate: 0, rated: true}, "?"},
		{status{total: 100, bytes: 40}, "?"},                              // no rate yet
		{status{total: 0, bytes: 40, byteRate: 20, rated: true}, "?"},     // no total
		{status{total: 1 << 50, bytes: 0, byteRate: 1, rated: true}, "?"}, // beyond maxETA
		{status{total: 1 << 40, bytes: 0, byteRate: 1e6, rated: true}, "305:25:12"},
	} {
		got := "?"
		if d, ok := c.s.eta(); ok {
			got = formatClock(d)
		}
		if got != c.want {
			t.Errorf("eta(%+v) = %s, want %s", c.s, got, c.want)
		}
	}
}

func TestLongFileNamesFitTheWidth(t *testing.T) {
	clock := newClock()
	var buf bytes.Buffer
	name := "/var/log/" + strings.Repeat("very-long-directory-name/", 8) + "access.log.17.gz"
	for _, width := range []int{200, 120, 100, 80, 60, 40, 10} {
		d := New(&buf, Options{Total: 100 * mib, Terminal: TerminalOn, Width: width, Now: clock.Now})
		d.SetFile(name)
		d.Add(10*mib, 100_000)
		clock.Advance(time.Second)
		got := strings.TrimSuffix(strings.TrimPrefix(frame(d, &buf), "\r"), clearEOL)
		if n := utf8.RuneCountInString(got); n > width-1 {
			t.Errorf("width %d: %d columns: %q", width, n, got)
		}
		if width >= 100 && !strings.HasSuffix(got, "/access.log.17.gz") {
			t.Errorf("width %d: lost the end of the name: %q", width, got)
		}
		if width >= 100 && utf8.RuneCountInString(got) != width-1 {
			t.Errorf("width %d: name not cut to fill the line: %q", width, got)
		}
		if width < 100 && width > 60 && !strings.Contains(got, "…") {
			t.Errorf("width %d: name not shortened: %q", width, got)
		}
	}
}

func TestAutoDetectsNonTerminals(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []io.Writer{f, &bytes.Buffer{}} {
		d := New(w, Options{})
		if d.terminal || d.interval != quietInterval {
			t.Errorf("%T: terminal %v, interval %v", w, d.terminal, d.interval)
		}
	}
	if d := New(f, Options{Terminal: TerminalOn}); !d.terminal || d.interval != terminalInterval || d.currentWidth() != defaultWidth {
		t.Errorf("forced on: terminal %v, interval %v, width %d", d.terminal, d.interval, d.currentWidth())
	}
}

func BenchmarkAdd(b *testing.B) {
	d := New(&bytes.Buffer{}, Options{Terminal: TerminalOff})
	for b.Loop() {
		d.Add(120, 1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/op")
}

// BenchmarkAddParallel is the worst case: every reader on one Display, so
// all contend for the counters' cache line.
func BenchmarkAddParallel(b *testing.B) {
	d := New(&bytes.Buffer{}, Options{Terminal: TerminalOff})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d.Add(120, 1)
		}
	})
}
