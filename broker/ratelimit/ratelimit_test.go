package ratelimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testenv"
)

// bucketName stands in for a bus.Bucket… constant until bus has one.
const bucketName = "ratelimits"

func bucket(t testing.TB, b *bus.Bus) jetstream.KeyValue {
	t.Helper()
	kv, err := b.KV(context.Background(), bucketName, 0)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

const ms = time.Millisecond

// TestReserveExact checks every wait against GCRA worked by hand:
// 10 per 1s (T = 100 ms) with bursts of 3 (tau = 200 ms).
func TestReserveExact(t *testing.T) {
	b, _ := testenv.NATS(t, testenv.Logger(t))
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	reg := prometheus.NewRegistry()
	lim := ratelimit.New(bucket(t, b), testenv.Logger(t), reg, clock.Now)
	l := ratelimit.Limit{Rate: 10, Per: time.Second, Burst: 3}
	k := ratelimit.Global()
	ctx := context.Background()

	reserve := func(want time.Duration) {
		t.Helper()
		s, err := lim.Reserve(ctx, k, l)
		if err != nil {
			t.Fatal(err)
		}
		if s.Wait != want || !s.At.Equal(clock.Now().Add(want)) {
			t.Fatalf("at %s: slot %s (wait %s), want wait %s",
				clock.Now().Sub(t0), s.At.Sub(t0), s.Wait, want)
		}
	}
	// A quiet key: the burst at once, then one per interval.
	for _, w := range []time.Duration{0, 0, 0, 100 * ms, 200 * ms} {
		reserve(w) // TAT ends at t0+500ms
	}
	clock.Set(t0.Add(250 * ms))
	reserve(50 * ms) // may go at TAT-tau = 300ms; TAT -> 600ms

	// Peek and a declined TryReserve see 600-200 = 400ms and claim nothing.
	for range 2 {
		if s, err := lim.Peek(ctx, k, l); err != nil || s.Wait != 150*ms {
			t.Fatalf("peek: %+v, %v; want wait 150ms", s, err)
		}
	}
	if s, ok, err := lim.TryReserve(ctx, k, l, 149*ms); err != nil || ok || s.Wait != 150*ms {
		t.Fatalf("TryReserve(149ms): %+v ok=%v %v; want declined with wait 150ms", s, ok, err)
	}
	if s, ok, err := lim.TryReserve(ctx, k, l, 150*ms); err != nil || !ok || s.Wait != 150*ms {
		t.Fatalf("TryReserve(150ms): %+v ok=%v %v; want claimed with wait 150ms", s, ok, err)
	}
	// Long idle refills the burst, and no more than the burst.
	clock.Set(t0.Add(time.Hour))
	for _, w := range []time.Duration{0, 0, 0, 100 * ms} {
		reserve(w)
	}
	// Another limit on another key is independent of this one.
	if s, err := lim.Reserve(ctx, ratelimit.Recipient("ops@example.com"), ratelimit.Limit{Rate: 20, Per: time.Hour, Burst: 1}); err != nil || s.Wait != 0 {
		t.Fatalf("recipient: %+v, %v", s, err)
	}
	if s, err := lim.Reserve(ctx, ratelimit.Recipient("OPS@example.com"), ratelimit.Limit{Rate: 20, Per: time.Hour, Burst: 1}); err != nil || s.Wait != 3*time.Minute {
		t.Fatalf("recipient again: %+v, %v; want wait 3m", s, err)
	}

	if got := metric(t, reg, "pagewatch_ratelimit_reservations_total", "global", "claimed"); got != 11 {
		t.Errorf("claimed: %v, want 11", got)
	}
	if got := metric(t, reg, "pagewatch_ratelimit_reservations_total", "global", "declined"); got != 1 {
		t.Errorf("declined: %v, want 1", got)
	}
	if got := metric(t, reg, "pagewatch_ratelimit_wait_seconds", "global"); got < 0.5999 || got > 0.6001 {
		t.Errorf("sum of waits: %v, want 0.6 (0.1+0.2+0.05+0.15+0.1)", got)
	}
	if got := metric(t, reg, "pagewatch_ratelimit_wait_seconds", "rcpt"); got != 180 {
		t.Errorf("sum of recipient waits: %v, want 180", got)
	}
}

// TestNoLimitTouchesNothing: the zero Limit needs no NATS at all.
func TestNoLimitTouchesNothing(t *testing.T) {
	lim := ratelimit.New(nil, testenv.Logger(t), prometheus.NewRegistry(), nil)
	if s, err := lim.Reserve(context.Background(), ratelimit.Global(), ratelimit.Limit{}); err != nil || s.Wait != 0 {
		t.Fatalf("%+v, %v", s, err)
	}
}

// write is one successful revision-checked write to the bucket.
type write struct {
	expect, rev uint64 // expect 0: Create
	tat         time.Time
}

// recordingKV logs every write that landed.
type recordingKV struct {
	ratelimit.KV
	mu     *sync.Mutex
	writes *[]write
}

func (r recordingKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	rev, err := r.KV.Create(ctx, key, value, opts...)
	r.record(0, rev, value, err)
	return rev, err
}

func (r recordingKV) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	rev, err := r.KV.Update(ctx, key, value, last)
	r.record(last, rev, value, err)
	return rev, err
}

func (r recordingKV) record(expect, rev uint64, value []byte, err error) {
	if err != nil {
		return
	}
	var st struct {
		TAT time.Time `json:"tat"`
	}
	_ = json.Unmarshal(value, &st)
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.writes = append(*r.writes, write{expect, rev, st.TAT})
}

// TestConcurrentLimiters: three processes (own connections), four
// goroutines each as with worker.concurrency 4, all reserving on one key.
// The real clock is used and nobody sleeps: what is checked is the slots
// handed out, never how fast anything ran.
func TestConcurrentLimiters(t *testing.T) {
	logger := testenv.Logger(t)
	_, ns := testenv.NATS(t, logger)
	l := ratelimit.Limit{Rate: 1000, Per: time.Second, Burst: 10} // T = 1 ms
	const procs, goroutines, each = 3, 4, 50

	var mu sync.Mutex
	var writes []write
	var slots []time.Time
	var conflicts float64
	var wg sync.WaitGroup
	for p := range procs {
		nb := testenv.NATSClient(t, ns.URL, logger)
		reg := prometheus.NewRegistry()
		kv := recordingKV{KV: bucket(t, nb), mu: &mu, writes: &writes}
		lim := ratelimit.New(kv, logger, reg, nil)
		var pwg sync.WaitGroup
		for range goroutines {
			pwg.Add(1)
			go func() {
				defer pwg.Done()
				for range each {
					s, err := lim.Reserve(context.Background(), ratelimit.Global(), l)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					slots = append(slots, s.At)
					mu.Unlock()
				}
			}()
		}
		wg.Go(func() {
			pwg.Wait()
			c := metric(t, reg, "pagewatch_ratelimit_cas_conflicts_total", "global")
			mu.Lock()
			conflicts += c
			mu.Unlock()
			t.Logf("process %d: %v CAS conflicts, retried", p, c)
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	n := procs * goroutines * each
	if len(slots) != n || len(writes) != n {
		t.Fatalf("%d slots and %d writes, want %d of each", len(slots), len(writes), n)
	}
	// No slot handed out twice: the writes form one chain, each made on
	// top of the one before, and TAT moves by at least T every time.
	sort.Slice(writes, func(i, j int) bool { return writes[i].rev < writes[j].rev })
	for i, w := range writes {
		var prev write
		if i > 0 {
			prev = writes[i-1]
		}
		if w.expect != prev.rev {
			t.Fatalf("write %d (rev %d) was made on rev %d, but the rev before it is %d", i, w.rev, w.expect, prev.rev)
		}
		if i > 0 && w.tat.Sub(prev.tat) < time.Millisecond {
			t.Fatalf("write %d moved TAT by %s, less than T", i, w.tat.Sub(prev.tat))
		}
	}
	if err := ratelimit.WindowViolation(l, slots); err != nil {
		t.Fatal(err)
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i].Before(slots[j]) })
	t.Logf("%d slots over %s, %v CAS conflicts", n, slots[n-1].Sub(slots[0]), conflicts)
}

// rivalKV has another writer move the key just before each of our
// writes: left times, or forever.
type rivalKV struct {
	ratelimit.KV
	raw     jetstream.KeyValue
	left    *atomic.Int64
	forever bool
}

func (r rivalKV) rival(ctx context.Context, key string) {
	if !r.forever && r.left.Add(-1) < 0 {
		return
	}
	e, err := r.raw.Get(ctx, key)
	if err != nil {
		_, _ = r.raw.Create(ctx, key, []byte(fmt.Sprintf(`{"tat":%q,"now":%q}`, time.Now().Format(time.RFC3339Nano), time.Now().Format(time.RFC3339Nano))))
		return
	}
	_, _ = r.raw.Update(ctx, key, e.Value(), e.Revision())
}

func (r rivalKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	r.rival(ctx, key)
	return r.KV.Create(ctx, key, value, opts...)
}

func (r rivalKV) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	r.rival(ctx, key)
	return r.KV.Update(ctx, key, value, last)
}

func TestConflictsRetried(t *testing.T) {
	b, _ := testenv.NATS(t, testenv.Logger(t))
	raw := bucket(t, b)
	left := &atomic.Int64{}
	left.Store(5)
	reg := prometheus.NewRegistry()
	lim := ratelimit.New(rivalKV{KV: raw, raw: raw, left: left}, testenv.Logger(t), reg, nil)
	s, err := lim.Reserve(context.Background(), ratelimit.Global(), ratelimit.Limit{Rate: 1, Per: time.Second, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := metric(t, reg, "pagewatch_ratelimit_cas_conflicts_total", "global"); got != 5 {
		t.Fatalf("%v conflicts, want 5 (one per rival write)", got)
	}
	e, err := raw.Get(context.Background(), "global")
	if err != nil {
		t.Fatal(err)
	}
	if e.Revision() != 6 { // 5 rival writes (the first a Create), then ours
		t.Fatalf("revision %d, want 6", e.Revision())
	}
	t.Logf("granted %+v after 5 conflicts", s)
}

func TestCancelDuringConflicts(t *testing.T) {
	b, _ := testenv.NATS(t, testenv.Logger(t))
	raw := bucket(t, b)
	reg := prometheus.NewRegistry()
	lim := ratelimit.New(rivalKV{KV: raw, raw: raw, forever: true}, testenv.Logger(t), reg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*ms, cancel)
	_, err := lim.Reserve(ctx, ratelimit.Global(), ratelimit.Limit{Rate: 1, Per: time.Second, Burst: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if got := metric(t, reg, "pagewatch_ratelimit_cas_conflicts_total", "global"); got < 2 {
		t.Fatalf("%v conflicts before the cancel, want several", got)
	}
	t.Logf("cancelled after %v conflicts: %v", metric(t, reg, "pagewatch_ratelimit_cas_conflicts_total", "global"), err)
}

// TestNATSDown: no NATS, no slot; the same state is there after a restart.
func TestNATSDown(t *testing.T) {
	b, ns := testenv.NATS(t, testenv.Logger(t))
	reg := prometheus.NewRegistry()
	lim := ratelimit.New(bucket(t, b), testenv.Logger(t), reg, nil)
	l := ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}
	ctx := context.Background()
	first, err := lim.Reserve(ctx, ratelimit.Global(), l)
	if err != nil {
		t.Fatal(err)
	}
	ns.Stop()
	down, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if s, err := lim.Reserve(down, ratelimit.Global(), l); err == nil {
		t.Fatalf("granted %+v with NATS down", s)
	}
	if got := metric(t, reg, "pagewatch_ratelimit_errors_total", "global"); got != 1 {
		t.Fatalf("errors: %v, want 1", got)
	}
	ns.Restart(t)
	var s ratelimit.Slot
	testcheck.Eventually(t, 15*time.Second, "a reservation after NATS restarted", func() (err error) {
		s, err = lim.Reserve(ctx, ratelimit.Global(), l)
		return err
	})
	// The slot claimed before the outage still counts.
	if s.At.Sub(first.At) < time.Hour {
		t.Fatalf("after restart: slot %s, want an hour after %s", s.At, first.At)
	}
}

// TestUnreadableState: garbage in the bucket costs the burst, not the mail.
func TestUnreadableState(t *testing.T) {
	b, _ := testenv.NATS(t, testenv.Logger(t))
	kv := bucket(t, b)
	if _, err := kv.Put(context.Background(), "global", []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	lim := ratelimit.New(kv, testenv.Logger(t), prometheus.NewRegistry(), clock.Now)
	l := ratelimit.Limit{Rate: 10, Per: time.Second, Burst: 5}
	for _, want := range []time.Duration{100 * ms, 200 * ms} {
		if s, err := lim.Reserve(context.Background(), ratelimit.Global(), l); err != nil || s.Wait != want {
			t.Fatalf("%+v, %v; want wait %s", s, err, want)
		}
	}
}

// TestClockSkewMeasured: a writer 10 s behind is seen by the next reader.
func TestClockSkewMeasured(t *testing.T) {
	b, _ := testenv.NATS(t, testenv.Logger(t))
	kv := bucket(t, b)
	behind := func() time.Time { return time.Now().Add(-10 * time.Second) }
	l := ratelimit.Limit{Rate: 10, Per: time.Second, Burst: 5}
	if _, err := ratelimit.New(kv, testenv.Logger(t), prometheus.NewRegistry(), behind).Reserve(context.Background(), ratelimit.Global(), l); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if _, err := ratelimit.New(kv, testenv.Logger(t), reg, nil).Peek(context.Background(), ratelimit.Global(), l); err != nil {
		t.Fatal(err)
	}
	if got := metric(t, reg, "pagewatch_ratelimit_clock_skew_seconds"); got < 9.9 || got > 11 {
		t.Fatalf("skew %v s, want about 10", got)
	}
}

// metric returns a counter's value, or a histogram's sum, from reg; labels
// are the values of the metric's labels in order.
func metric(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for i, lp := range m.GetLabel() {
				if lp.GetValue() != labels[i] {
					continue next
				}
			}
			if h := m.GetHistogram(); h != nil {
				return h.GetSampleSum()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s%v in the registry", name, labels)
	return 0
}
