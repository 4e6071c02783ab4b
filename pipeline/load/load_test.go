package load_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/pipeline/load"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

type bundle struct {
	bus     *bus.Bus
	natsURL string
	natsPID int // benchSetup's NATS child process
	ch      *clickhouse.Client
	chSrv   *clickhousetest.Server
	cfg     load.Config
	logger  *slog.Logger
}

func setup(t testing.TB) *bundle {
	t.Helper()
	logger := testenv.Logger(t)
	b, ns := testenv.NATS(t, logger)
	c, srv := clickHouse(t, logger)
	cfg := load.DefaultConfig()
	cfg.BatchRows = 2000
	cfg.BatchAge = 100 * time.Millisecond
	cfg.AckWait = 5 * time.Second
	return &bundle{bus: b, natsURL: ns.URL, ch: c, chSrv: srv, cfg: cfg, logger: logger}
}

// clickHouse starts a clickhouse-server with the schema applied and opens
// a client that inserts hits over HTTP, as clickhouse.http_addr makes a
// loader do.
func clickHouse(t testing.TB, logger *slog.Logger) (*clickhouse.Client, *clickhousetest.Server) {
	t.Helper()
	srv := clickhousetest.Start(t)
	c := clickHouseClient(t, srv, logger)
	if _, err := c.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, srv
}

// clickHouseClient opens another client to srv, inserting over HTTP.
func clickHouseClient(t testing.TB, srv *clickhousetest.Server, logger *slog.Logger) *clickhouse.Client {
	t.Helper()
	cfg := clickhouse.DefaultConfig()
	cfg.Addr = []string{srv.Addr}
	cfg.HTTPAddr = []string{srv.HTTPAddr}
	if v := os.Getenv("PAGEWATCH_BENCH_HTTP_COMPRESSION"); v != "" {
		cfg.HTTPCompression = v // none: what a loader on the server's host saves
	}
	c, err := clickhouse.Open(context.Background(), cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// publish sends msgs messages of per hits each, all on one page.
func (b *bundle) publish(t *testing.T, msgs, per int) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.bus.HitsStream(ctx); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-5 * time.Minute)
	for m := 0; m < msgs; m++ {
		var enc hit.Encoder
		for i := 0; i < per; i++ {
			enc.Add(&hit.Hit{Time: at, Site: "example.com", Path: "/pricing", Method: "GET", Status: 200, Offset: uint64(i)})
		}
		msg := nats.NewMsg(b.bus.HitsSubject("test", fmt.Sprint(m%3)))
		msg.Data = enc.Bytes()
		if _, err := b.bus.JS.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
}

// run starts a loader over store until the returned stop is called.
func (b *bundle) run(t testing.TB, store load.Store) (stop func()) {
	t.Helper()
	l, err := load.New(b.cfg, load.Deps{Bus: b.bus, Store: store, Logger: b.logger, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return runLoader(t, l)
}

// runLoader runs l until the returned stop is called.
func runLoader(tb testing.TB, l *load.Loader) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("loader: %v", err)
		}
	}
}

func (b *bundle) waitCount(t *testing.T, want uint64) {
	t.Helper()
	testcheck.Eventually(t, 30*time.Second, fmt.Sprintf("%d hits loaded", want), func() error {
		n, err := b.ch.Hits().HitCount(context.Background())
		pages, _ := b.ch.Hits().PageCount(context.Background(), "example.com", "/pricing", time.Time{})
		if err == nil && n == want && pages == want {
			return nil
		}
		return fmt.Errorf("hits in ClickHouse: %d (err %v), page count %d, want %d", n, err, pages, want)
	})
}

func (b *bundle) assertPageCount(t *testing.T, want uint64) {
	t.Helper()
	got, err := b.ch.Hits().PageCount(context.Background(), "example.com", "/pricing", time.Time{})
	if err != nil || got != want {
		t.Fatalf("PageCount = %d, %v; want %d", got, err, want)
	}
}

func TestTwoLoadersExactCounts(t *testing.T) {
	b := setup(t)
	b.publish(t, 300, 100)
	defer b.run(t, b.ch.Hits())()
	defer b.run(t, b.ch.Hits())()
	b.waitCount(t, 30_000)
	b.assertPageCount(t, 30_000)
}

// crashAfterInsert inserts, then "dies" before the ack: the ack never
// happens and the batch is delivered again, to another loader.
type crashAfterInsert struct {
	inner  load.Store
	crash  func()
	armed  atomic.Bool
	crashs atomic.Int32
}

func (c *crashAfterInsert) InsertHits(ctx context.Context, batches []hit.Batch) error {
	if err := c.inner.InsertHits(ctx, batches); err != nil {
		return err
	}
	if c.armed.CompareAndSwap(true, false) {
		c.crashs.Add(1)
		c.crash()
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func TestRedeliveryAfterCrashBetweenInsertAndAck(t *testing.T) {
	b := setup(t)
	b.publish(t, 200, 50)
	crashing := &crashAfterInsert{inner: b.ch.Hits()}
	crashing.armed.Store(true)
	l, err := load.New(b.cfg, load.Deps{Bus: b.bus, Store: crashing, Logger: b.logger, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	crashing.crash = cancel
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if crashing.crashs.Load() != 1 {
		t.Fatal("the crash never happened")
	}
	defer b.run(t, b.ch.Hits())()
	b.waitCount(t, 10_000)
	b.assertPageCount(t, 10_000)
}

func TestClickHouseOutage(t *testing.T) {
	b := setup(t)
	b.publish(t, 50, 100)
	defer b.run(t, b.ch.Hits())()
	b.waitCount(t, 5000)
	b.chSrv.Stop()
	b.publish(t, 50, 100)
	time.Sleep(time.Second)
	b.chSrv.Restart(t)
	b.waitCount(t, 10_000)
	b.assertPageCount(t, 10_000)
}

// A deleted consumer is recreated; the new one starts from the stream's
// beginning, and loading everything again changes no count. The fetches
// that failed meanwhile are counted (pagewatch_ingest_load_fetch_errors_total,
// which a short NATS outage in the e2e tests does not always make fail).
func TestConsumerDeletedIsRecreated(t *testing.T) {
	b := setup(t)
	b.publish(t, 50, 100)
	reg := prometheus.NewRegistry()
	l, err := load.New(b.cfg, load.Deps{Bus: b.bus, Store: b.ch.Hits(), Logger: b.logger, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer runLoader(t, l)()
	b.waitCount(t, 5000)
	s, err := b.bus.HitsStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConsumer(context.Background(), b.cfg.Consumer); err != nil {
		t.Fatal(err)
	}
	b.publish(t, 50, 100)
	b.waitCount(t, 10_000)
	b.assertPageCount(t, 10_000)
	if n := counterValue(t, reg, "pagewatch_ingest_load_fetch_errors_total"); n < 1 {
		t.Errorf("fetch errors counted: %v, want at least 1 (the fetches of the deleted consumer)", n)
	}
}

// counterValue is the value of the counter name in reg (0 if absent).
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			var v float64
			for _, m := range f.GetMetric() {
				v += m.GetCounter().GetValue()
			}
			return v
		}
	}
	return 0
}
