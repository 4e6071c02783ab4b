package visitor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/pipeline/visitor"
)

// clock is a fake clock shared by the tailers of a test.
type clock struct{ ns atomic.Int64 }

func (c *clock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

type bundle struct {
	ns    *natstest.Server
	clock *clock
	// buses are separate connections to one server: one per tailer.
	buses [2]*bus.Bus
}

func setup(t testing.TB) *bundle {
	t.Helper()
	logger := testenv.Logger(t)
	b0, ns := testenv.NATS(t, logger)
	c := &clock{}
	c.set(time.Now())
	return &bundle{ns: ns, clock: c, buses: [2]*bus.Bus{b0, testenv.NATSClient(t, ns.URL, logger)}}
}

// tailer is one simulated tailer process: its own Salts and registry.
type tailer struct {
	salts *visitor.Salts
	reg   *prometheus.Registry
}

func (b *bundle) tailer(i int) tailer {
	reg := prometheus.NewRegistry()
	return tailer{salts: visitor.NewSalts(b.buses[i], reg, b.clock.now), reg: reg}
}

func (tl tailer) created(t testing.TB) float64 {
	return counter(t, tl.reg, "pagewatch_visitor_salts_created_total")
}

func counter(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// writes is how many writes the salts bucket has taken: its stream's
// last sequence, which counts overwritten and deleted entries too. It
// asks on the second connection (the first is closed by some tests).
func (b *bundle) writes(t testing.TB) uint64 {
	t.Helper()
	s, err := b.buses[1].JS.Stream(t.Context(), "KV_"+b.buses[1].BucketName(visitor.Bucket))
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

func key(t testing.TB, k *visitor.Keyer, at time.Time, addr, ua string) uint64 {
	t.Helper()
	v, err := k.Key(t.Context(), at, []byte(addr), []byte(ua))
	if err != nil {
		t.Fatal(err)
	}
	if v == visitor.NoKey {
		t.Fatal("Key returned NoKey")
	}
	return v
}

const (
	firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	chrome  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)

// Two tailers hash a client alike on a day and differently the next;
// different clients differ; a line of yesterday read after midnight gets
// yesterday's key.
func TestTailersAgreeWithinADayNotAcross(t *testing.T) {
	b := setup(t)
	midnight := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	before, after := midnight.Add(-time.Millisecond), midnight
	b.clock.set(before)
	k0, k1 := b.tailer(0).salts.Keyer(), b.tailer(1).salts.Keyer()

	day1 := key(t, k0, before, "203.0.113.7", firefox)
	if got := key(t, k1, before, "203.0.113.7", firefox); got != day1 {
		t.Fatalf("before midnight the tailers disagree: %x and %x", day1, got)
	}
	others := map[string]uint64{
		"another address":    key(t, k1, before, "203.0.113.8", firefox),
		"another browser":    key(t, k0, before, "203.0.113.7", chrome),
		"IPv6":               key(t, k1, before, "2001:db8::7", firefox),
		"no user agent":      key(t, k0, before, "203.0.113.7", ""),
		"ab + c (vs a + bc)": key(t, k0, before, "ab", "c"),
	}
	if v := key(t, k1, before, "a", "bc"); v == others["ab + c (vs a + bc)"] {
		t.Error(`("ab", "c") and ("a", "bc") have one key`)
	}
	for what, v := range others {
		if v == day1 {
			t.Errorf("%s: same key as the first client", what)
		}
	}

	b.clock.set(after)
	day2 := key(t, k1, after, "203.0.113.7", firefox)
	if got := key(t, k0, after, "203.0.113.7", firefox); got != day2 {
		t.Fatalf("after midnight the tailers disagree: %x and %x", day2, got)
	}
	if day2 == day1 {
		t.Fatal("the client has one key on two days")
	}
	if got := key(t, k0, before, "203.0.113.7", firefox); got != day1 {
		t.Errorf("a late line of the day before: key %x, want that day's %x", got, day1)
	}
	if w := b.writes(t); w != 2 {
		t.Errorf("%d writes to the bucket for two days, want 2", w)
	}
}

// Many tailers, each with many goroutines, asking for the salts of the
// same days at the same instant: one salt per day is stored, and all
// hash alike.
func TestOneSaltPerDayUnderRace(t *testing.T) {
	b := setup(t)
	const perBus, goroutines, days = 4, 8, 10
	first := time.Now().UTC().Add(-5 * 24 * time.Hour)
	var tailers []tailer
	for i := range 2 * perBus {
		tailers = append(tailers, b.tailer(i%2))
	}
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		mu    sync.Mutex
		seen  = map[int]map[uint64]bool{}
	)
	for _, tl := range tailers {
		for range goroutines {
			wg.Go(func() {
				k := tl.salts.Keyer()
				<-start
				for d := range days {
					v, err := k.Key(t.Context(), first.Add(time.Duration(d)*24*time.Hour), []byte("198.51.100.1"), []byte(firefox))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if seen[d] == nil {
						seen[d] = map[uint64]bool{}
					}
					seen[d][v] = true
					mu.Unlock()
				}
			})
		}
	}
	close(start)
	wg.Wait()
	for d := range days {
		if len(seen[d]) != 1 {
			t.Errorf("day %d: %d different keys for one client", d, len(seen[d]))
		}
	}
	if w := b.writes(t); w != days {
		t.Errorf("%d writes to the bucket for %d days, want one each", w, days)
	}
	var created float64
	for _, tl := range tailers {
		created += tl.created(t)
	}
	if created != days {
		t.Errorf("tailers counted %v salts created, want %d", created, days)
	}
}

// The bucket deletes a salt two days after it was made, and holds a
// day's salt as 32 bytes under the day's date.
func TestBucketKeepsSaltsTwoDays(t *testing.T) {
	b := setup(t)
	at := time.Date(2026, 11, 28, 13, 0, 0, 0, time.UTC)
	key(t, b.tailer(0).salts.Keyer(), at, "203.0.113.7", firefox)

	ctx := t.Context()
	name := b.buses[0].BucketName(visitor.Bucket)
	if name != "pagewatch_visitor_salts" {
		t.Errorf("bucket %q, want pagewatch_visitor_salts", name)
	}
	kv, err := b.buses[0].JS.KeyValue(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != 48*time.Hour {
		t.Errorf("bucket TTL %s, want 48h", st.TTL())
	}
	s, err := b.buses[0].JS.Stream(ctx, "KV_"+name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxAge != 48*time.Hour {
		t.Errorf("stream MaxAge %s, want 48h", info.Config.MaxAge)
	}
	e, err := kv.Get(ctx, "2026-11-28")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Value()) != visitor.SaltBytes {
		t.Errorf("salt of %d bytes, want %d", len(e.Value()), visitor.SaltBytes)
	}
}

// A tailer started after the day's salt was made (the one that made it
// killed, NATS restarted meanwhile) reads it rather than make another.
func TestRestartedTailerReadsTheSalt(t *testing.T) {
	b := setup(t)
	now := b.clock.now()
	first := key(t, b.tailer(0).salts.Keyer(), now, "203.0.113.7", firefox)
	b.buses[0].Close() // the first tailer is gone
	b.ns.Restart(t)

	logger := testenv.Logger(t)
	tl := tailer{reg: prometheus.NewRegistry()}
	tl.salts = visitor.NewSalts(testenv.NATSClient(t, b.ns.URL, logger), tl.reg, b.clock.now)
	if got := key(t, tl.salts.Keyer(), now, "203.0.113.7", firefox); got != first {
		t.Fatalf("after a restart: key %x, want %x", got, first)
	}
	if c := tl.created(t); c != 0 {
		t.Errorf("the restarted tailer made %v salts, want 0", c)
	}
	if w := b.writes(t); w != 1 {
		t.Errorf("%d writes to the bucket, want 1", w)
	}
}

// With NATS down, Key fails by ctx's deadline saying what it could not
// get, for a tailer that never reached NATS and for a day not yet looked
// up; a day already looked up is still hashed.
func TestNATSDownFailsByTheDeadline(t *testing.T) {
	b := setup(t)
	now := b.clock.now()
	known := b.tailer(0)
	kk := known.salts.Keyer()
	want := key(t, kk, now, "203.0.113.7", firefox)
	fresh := b.tailer(1)
	b.ns.Stop()

	if got := key(t, kk, now, "203.0.113.7", firefox); got != want {
		t.Errorf("a known day with NATS down: key %x, want %x", got, want)
	}
	for _, c := range []struct {
		name string
		tl   tailer
		at   time.Time
	}{
		{"a tailer that never reached NATS", fresh, now},
		{"a day not yet looked up", known, now.Add(24 * time.Hour)},
	} {
		const deadline = 500 * time.Millisecond
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		start := time.Now()
		v, err := c.tl.salts.Keyer().Key(ctx, c.at, []byte("203.0.113.7"), []byte(firefox))
		took := time.Since(start)
		cancel()
		if err == nil || v != visitor.NoKey {
			t.Errorf("%s: key %x, err %v; want an error", c.name, v, err)
			continue
		}
		day := c.at.UTC().Format(time.DateOnly)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "visitor: salt of "+day) {
			t.Errorf("%s: err %q; want one naming the salt of %s, wrapping the deadline", c.name, err, day)
		}
		if took > deadline+time.Second {
			t.Errorf("%s: took %s, the deadline was %s", c.name, took, deadline)
		}
		if n := counter(t, c.tl.reg, "pagewatch_visitor_salt_fetch_errors_total"); n != 1 {
			t.Errorf("%s: %v fetch errors counted, want 1", c.name, n)
		}
	}
}

// A tailer forgets a salt once the bucket has deleted it, and holds few
// days: with NATS down, what it forgot can no longer be hashed.
func TestSaltsForgottenWithTheBucket(t *testing.T) {
	b := setup(t)
	tl := b.tailer(0)
	k := tl.salts.Keyer()
	now := b.clock.now()
	var days []time.Time
	for d := range 9 {
		days = append(days, now.Add(time.Duration(d-8)*24*time.Hour))
		key(t, k, days[d], "203.0.113.7", firefox)
	}
	b.ns.Stop()
	try := func(at time.Time) error {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := tl.salts.Keyer().Key(ctx, at, []byte("203.0.113.7"), []byte(firefox))
		return err
	}
	if err := try(days[0]); err == nil {
		t.Error("the oldest of 9 days is still held")
	}
	if err := try(days[8]); err != nil {
		t.Errorf("today's salt: %v", err)
	}
	// In real time a timer forgets the salt when the bucket deletes it;
	// the fake clock cannot fire it, but the next lookup sees it is due.
	b.clock.add(visitor.SaltTTL + time.Minute)
	if err := try(days[8]); err == nil {
		t.Error("today's salt is still held after the bucket deleted it")
	}
	// The Keyer that held it asks again too.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := k.Key(ctx, days[8], []byte("203.0.113.7"), []byte(firefox)); err == nil {
		t.Error("a Keyer goes on using a salt the bucket deleted")
	}
}

func TestKeyRefusesAHitWithoutTime(t *testing.T) {
	b := setup(t)
	if _, err := b.tailer(0).salts.Keyer().Key(t.Context(), time.Time{}, []byte("a"), []byte("b")); err == nil {
		t.Fatal("a zero time was hashed")
	}
}

func TestDefaultConfigIsValidAndOn(t *testing.T) {
	c := visitor.DefaultConfig()
	if err := c.Validate(); err != nil || !c.Enabled {
		t.Fatalf("DefaultConfig() = %+v, Validate() = %v", c, err)
	}
}
