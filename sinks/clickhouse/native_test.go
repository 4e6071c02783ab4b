package clickhouse

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/ch-go/compress"
	"github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	chproto "github.com/ClickHouse/clickhouse-go/v2/lib/proto"
	"github.com/pierrec/lz4/v4"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/sqlcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/schema"
)

// hostileBatches are hits whose strings are what a log can hold and a
// careless encoder would mangle: NULs, control bytes, invalid UTF-8,
// binary junk, quotes, a path of 100 KB and empty strings; with times on
// two days and in another year, and offsets and keys up to 2^64-1.
func hostileBatches() []hit.Batch {
	rng := rand.New(rand.NewPCG(19, 19))
	junk := make([]byte, 300)
	for i := range junk {
		junk[i] = byte(rng.IntN(256))
	}
	sites := []string{"example.com", "ex\x00ample", "\xff\xfe\xc3("}
	paths := []string{"/", "/\x00nul", "/\xc3\x28bad", "/tab\there\nnl\r", `/'q"\`, strings.Repeat("/huge", 20_000), ""}
	refs := []string{"", "-", "\x00\x01\x02", string(junk), "https://ref.example/ä"}
	base := time.Date(2026, 3, 31, 23, 59, 0, 0, time.UTC)
	var batches []hit.Batch
	for m := 0; m < 3; m++ {
		b := hit.Batch{Seq: uint64(100 + m), Key: math.MaxUint64 - uint64(m), LineKey: 1<<63 + uint64(m)}
		for i := 0; i < 40; i++ {
			at := base.Add(time.Duration(rng.IntN(180)) * time.Second)
			if i == 0 {
				at = time.Date(2009, 2, 13, 23, 31, 30, 0, time.UTC)
			}
			b.Hits = append(b.Hits, hit.Hit{
				Time: at, Site: sites[rng.IntN(len(sites))], Path: paths[rng.IntN(len(paths))],
				Referer: refs[rng.IntN(len(refs))], Offset: uint64(i) << 58,
			})
		}
		batches = append(batches, b)
	}
	return batches
}

func openHTTPClient(t *testing.T, srv *clickhousetest.Server, compression string) *Client {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = []string{srv.Addr}
	cfg.HTTPAddr = []string{srv.HTTPAddr}
	cfg.HTTPCompression = compression
	c, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The blocks pagewatch encodes are byte for byte what clickhouse-go sends
// over HTTP for the same rows: the driver's own column types, given the
// columns its batches get when http_addr is not set, encoded as its HTTP
// batches encode them (revision 0: no block info). Its LZ4 is one
// ch-go frame per block; pagewatch's is the same frame up to 1 MiB.
func TestNativeBlocksAreTheDrivers(t *testing.T) {
	rows, pages, refs := sortedRows(nil, hostileBatches())
	minutes := countMinutes(nil, rows)
	days := loadedDays(minutes)
	// One insert's rows: the largest day's.
	parts := splitBy(len(rows), func(i int) int { return int(rows[i].day) })
	big := slices.MaxFunc(parts, func(a, b span) int { return (a.to - a.from) - (b.to - b.from) })
	day := rows[big.from:big.to]
	if len(day) < 50 {
		t.Fatalf("largest day has %d rows", len(day))
	}
	for _, c := range []struct {
		table   string
		columns []string
		types   []string
		values  []any
		ours    []byte
	}{
		{"hits", []string{"ts", "site", "path", "referer", "seq", "line_offset"}, []string{"DateTime", "String", "String", "String", "UInt64", "UInt64"},
			hitColumns(day, pages, refs), appendHits(nil, day, pages, refs)},
		{"page_minutes", []string{"site", "path", "minute", "seq", "hits"}, []string{"String", "String", "DateTime", "UInt64", "UInt64"},
			minuteColumns(minutes, pages), appendMinutes(nil, minutes, pages)},
		{"loaded_days", []string{"day", "seq"}, []string{"Date", "UInt64"}, dayColumns(days), appendDays(nil, days)},
	} {
		// The server's time zone does not matter: DateTime is seconds.
		block := chproto.NewBlock()
		block.ServerContext.Timezone = time.UTC
		for i, name := range c.columns {
			if err := block.AddColumn(name, column.Type(c.types[i])); err != nil {
				t.Fatal(err)
			}
			if _, err := block.Columns[i].Append(c.values[i]); err != nil {
				t.Fatalf("%s.%s: %v", c.table, name, err)
			}
		}
		var buf proto.Buffer
		if err := block.Encode(&buf, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Buf, c.ours) {
			t.Errorf("%s: %d bytes from the driver, %d from pagewatch; first difference at byte %d",
				c.table, len(buf.Buf), len(c.ours), firstDiff(buf.Buf, c.ours))
		}
		if len(c.ours) > frameSize {
			continue
		}
		w := compress.NewWriter(compress.LevelZero, compress.LZ4)
		if err := w.Compress(buf.Buf); err != nil {
			t.Fatal(err)
		}
		if ours, err := framed(new(lz4.Compressor), nil, c.ours); err != nil || !bytes.Equal(w.Data, ours) {
			t.Errorf("%s: LZ4 frames differ from the driver's (%v)", c.table, err)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// wantHits is what reading the hits table back must give for batches:
// each hit once, as hex(site), hex(path), hex(referer), ts, seq, offset.
func wantHits(batches []hit.Batch) []string {
	var out []string
	for _, b := range batches {
		for _, h := range b.Hits {
			out = append(out, fmt.Sprintf("%X\t%X\t%X\t%d\t%d\t%d", h.Site, h.Path, h.Referer, h.Time.Unix(), b.HitKey(), h.Offset))
		}
	}
	slices.Sort(out)
	return out
}

func selectHitsHex(table string) string {
	return "SELECT hex(site), hex(path), hex(referer), toUInt32(ts), seq, line_offset FROM " + table
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return lines
}

// Hostile rows inserted over HTTP, with and without LZ4, read back from
// ClickHouse 18.16 exactly; inserting the same batches again, decoded
// lean or not, changes no count.
func TestHTTPInsertRoundTrip(t *testing.T) {
	srv := clickhousetest.Start(t)
	ctx := context.Background()
	var all []hit.Batch
	for i, compression := range []string{compressionLZ4, compressionNone} {
		c := openHTTPClient(t, srv, compression)
		if _, err := c.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		batches := hostileBatches()
		for j := range batches {
			batches[j].LineKey += uint64(i) << 32 // the second client's hits are others
			batches[j].Key -= uint64(i) << 32
		}
		all = append(all, batches...)
		// Once as the loader hands them over (decoded lean), once as Hit
		// values: the same rows.
		var lean []hit.Batch
		for _, b := range batches {
			lean = append(lean, leanOf(t, b))
		}
		for _, bs := range [][]hit.Batch{lean, batches} {
			if err := c.Hits().InsertHits(ctx, bs); err != nil {
				t.Fatalf("%s: %v", compression, err)
			}
		}
	}
	got := sortedLines(srv.Query(t, "SELECT DISTINCT * FROM ("+selectHitsHex("pagewatch.hits")+") FORMAT TabSeparated"))
	if want := wantHits(all); !slices.Equal(got, want) {
		t.Fatalf("hits read back differ: %d rows, want %d\n%s", len(got), len(want), diffLines(got, want))
	}
	c := openHTTPClient(t, srv, compressionLZ4)
	if n, err := c.Hits().HitCount(ctx); err != nil || n != 240 {
		t.Fatalf("HitCount = %d, %v; want 240", n, err)
	}
	for _, b := range all {
		for _, h := range b.Hits[:1] {
			want := uint64(0)
			for _, b2 := range all {
				for _, h2 := range b2.Hits {
					if h2.Site == h.Site && h2.Path == h.Path {
						want++
					}
				}
			}
			if got, err := c.Hits().PageCount(ctx, h.Site, h.Path, time.Time{}); err != nil || got != want {
				t.Fatalf("PageCount(%q, %.20q) = %d, %v; want %d", h.Site, h.Path, got, err, want)
			}
		}
	}
	rows, _, _ := sortedRows(nil, all)
	want := fmt.Sprint(len(loadedDays(countMinutes(nil, rows))))
	if got := strings.TrimSpace(srv.Query(t, "SELECT count() FROM (SELECT DISTINCT day, seq FROM pagewatch.loaded_days)")); got != want {
		t.Fatalf("loaded_days holds %s (day, message) pairs, want %s", got, want)
	}
}

func diffLines(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference, line %d:\n got  %.200s\n want %.200s", i, got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}

// chDB takes no network inserts, so the current engine reads the same
// blocks from Native files: every hostile row comes back exactly.
func TestNativeBlocksOnCurrentEngine(t *testing.T) {
	batches := hostileBatches()
	rows, pages, refs := sortedRows(nil, batches)
	minutes := countMinutes(nil, rows)
	dir := t.TempDir()
	migrations, err := schema.Migrations(schema.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	var stmts []sqlcheck.Statement
	for _, m := range migrations {
		for i, s := range m.Statements {
			stmts = append(stmts, sqlcheck.Statement{Name: fmt.Sprintf("schema %s #%d", m.Name, i+1), SQL: s})
		}
	}
	load := func(name, insert string, native []byte) {
		file := filepath.Join(dir, name+".native")
		if err := os.WriteFile(file, native, 0o644); err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, sqlcheck.Statement{Name: "load " + name, SQL: insert + " FROM INFILE '" + file + "' FORMAT Native"})
	}
	for _, part := range splitBy(len(rows), func(i int) int { return int(rows[i].day) }) {
		load(fmt.Sprintf("hits-%d", part.key), insertHits, appendHits(nil, rows[part.from:part.to], pages, refs))
	}
	load("page_minutes", insertPageMinutes, appendMinutes(nil, minutes, pages))
	load("loaded_days", insertLoadedDays, appendDays(nil, loadedDays(minutes)))
	stmts = append(stmts,
		sqlcheck.Statement{Name: "hits", SQL: selectHitsHex("hits") + " FORMAT TabSeparated"},
		sqlcheck.Statement{Name: "page_minutes", SQL: "SELECT sum(hits), count() FROM page_minutes"},
		sqlcheck.Statement{Name: "loaded_days", SQL: "SELECT count() FROM loaded_days"},
	)
	results := sqlcheck.Query(t, stmts)
	if t.Failed() {
		return
	}
	n := len(results)
	got := sortedLines(results[n-3].Output)
	if want := wantHits(batches); !slices.Equal(got, want) {
		t.Fatalf("hits read back differ: %d rows, want %d\n%s", len(got), len(want), diffLines(got, want))
	}
	if got, want := strings.TrimSpace(results[n-2].Output), fmt.Sprintf("120,%d", len(minutes)); got != want {
		t.Errorf("page_minutes: sum, count = %s, want %s", got, want)
	}
	if got, want := strings.TrimSpace(results[n-1].Output), fmt.Sprint(len(loadedDays(minutes))); got != want {
		t.Errorf("loaded_days: %s rows, want %s", got, want)
	}
}

// Inserts over HTTP log in as the native connection does: the same user
// and password, and a wrong password is refused without being printed.
func TestHTTPInsertPassword(t *testing.T) {
	const pass = "ch-http-pw-5c1e0b"
	srv := clickhousetest.StartWith(t, clickhousetest.Options{Users: []clickhousetest.User{{Name: "loader", Password: pass}}})
	cfg := DefaultConfig()
	cfg.Addr, cfg.HTTPAddr = []string{srv.Addr}, []string{srv.HTTPAddr}
	cfg.Username, cfg.Password = "loader", secret.New(pass)
	ctx := context.Background()
	c := openMigratedWith(t, cfg)
	batches := hostileBatches()[:1]
	if err := c.Hits().InsertHits(ctx, batches); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Hits().HitCount(ctx); err != nil || n != 40 {
		t.Fatalf("HitCount = %d, %v; want 40", n, err)
	}
	// The native connection stays logged in; only the inserts use the
	// wrong password.
	c.http.password = "wrong-" + pass
	err := c.Hits().InsertHits(ctx, batches)
	if err == nil || strings.Contains(err.Error(), pass) || !strings.Contains(err.Error(), "loader") {
		t.Fatalf("insert with a wrong password: %v; want a refusal naming the user and not the password", err)
	}
}

func TestHTTPConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HTTPAddr = []string{"127.0.0.1:8123", "no-port", ""}
	cfg.HTTPCompression = "zstd"
	err := cfg.Validate()
	for _, want := range []string{"clickhouse.http_addr[1]", "clickhouse.http_addr[2]", "clickhouse.http_compression"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v; want it to name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "http_addr[0]") {
		t.Errorf("Validate() = %v; http_addr[0] is fine", err)
	}
}

// An http_addr that cannot be reached fails that insert, which the loader
// retries; the retry goes to the next address.
func TestHTTPInsertMovesToTheNextAddress(t *testing.T) {
	srv := clickhousetest.Start(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	cfg := DefaultConfig()
	cfg.Addr, cfg.HTTPAddr = []string{srv.Addr}, []string{dead, srv.HTTPAddr}
	ctx := context.Background()
	c := openMigratedWith(t, cfg)
	batches := hostileBatches()[:1]
	if err := c.Hits().InsertHits(ctx, batches); err == nil || !strings.Contains(err.Error(), dead) {
		t.Fatalf("first insert: %v; want it refused by %s", err, dead)
	}
	if err := c.Hits().InsertHits(ctx, batches); err != nil {
		t.Fatalf("retried insert: %v", err)
	}
	if n, err := c.Hits().HitCount(ctx); err != nil || n != 40 {
		t.Fatalf("HitCount = %d, %v; want 40", n, err)
	}
}

// openMigratedWith opens a client on cfg with the schema in place,
// closed when the test ends.
func openMigratedWith(t *testing.T, cfg Config) *Client {
	t.Helper()
	ctx := context.Background()
	c, err := Open(ctx, cfg, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}
