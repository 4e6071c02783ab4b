package clickhousetest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
)

// createTable uses the explicit MergeTree syntax (PARTITION BY / ORDER BY),
// which ClickHouse 18.16 accepts.
const createTable = `CREATE TABLE t (a UInt64, s String) ENGINE = MergeTree() PARTITION BY tuple() ORDER BY a`

func open(t *testing.T, srv *clickhousetest.Server, comp *clickhouse.Compression) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{srv.Addr},
		Auth:        clickhouse.Auth{Database: "default", Username: "default"},
		Compression: comp,
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func insert(t *testing.T, conn driver.Conn, from, n int) {
	t.Helper()
	ctx := context.Background()
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO t (a, s)")
	if err != nil {
		t.Fatalf("prepare batch: %v", err)
	}
	for i := from; i < from+n; i++ {
		if err := batch.Append(uint64(i), fmt.Sprintf("row-%d", i)); err != nil {
			t.Fatalf("append: %v", err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func count(t *testing.T, conn driver.Conn) uint64 {
	t.Helper()
	var n uint64
	if err := conn.QueryRow(context.Background(), "SELECT count() FROM t WHERE a >= ?", 0).Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

func TestStartInsertStopRestart(t *testing.T) {
	srv := clickhousetest.Start(t)
	srv.Query(t, createTable)

	conn := open(t, srv, nil)
	if err := conn.Ping(context.Background()); err != nil {
		t.Fatalf("ping: %v", err)
	}
	insert(t, conn, 0, 1000)
	if got := count(t, conn); got != 1000 {
		t.Fatalf("count = %d, want 1000", got)
	}
	if got := srv.Query(t, "SELECT s FROM t WHERE a = 7"); got != "row-7\n" {
		t.Fatalf("HTTP query = %q, want %q", got, "row-7\n")
	}

	srv.Stop()
	srv.Stop() // idempotent
	if err := conn.Ping(context.Background()); err == nil {
		t.Fatal("ping succeeded while the server is stopped")
	}

	srv.Restart(t)
	if got := strings.TrimSpace(srv.Query(t, "SELECT count() FROM t")); got != "1000" {
		t.Fatalf("count after restart = %s, want 1000", got)
	}
	// The same client must recover from the outage once the server is back,
	// which is what outage tests rely on.
	var err error
	for i := 0; i < 3; i++ {
		if err = conn.Ping(context.Background()); err == nil {
			break
		}
		t.Logf("ping #%d after restart: %v", i+1, err)
	}
	if err != nil {
		t.Fatalf("client did not recover after restart: %v", err)
	}
	insert(t, conn, 1000, 10)
	if got := count(t, conn); got != 1010 {
		t.Fatalf("count = %d, want 1010", got)
	}
}

func TestLZ4Compression(t *testing.T) {
	srv := clickhousetest.Start(t)
	srv.Query(t, createTable)
	conn := open(t, srv, &clickhouse.Compression{Method: clickhouse.CompressionLZ4})
	insert(t, conn, 0, 5000)
	if got := count(t, conn); got != 5000 {
		t.Fatalf("count = %d, want 5000", got)
	}
}

func TestParallelServers(t *testing.T) {
	addrs := make(chan string, 2)
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			srv := clickhousetest.Start(t)
			addrs <- srv.Addr
			srv.Query(t, createTable)
			conn := open(t, srv, nil)
			n := 100 * (i + 1) // different per server, to catch shared state
			insert(t, conn, 0, n)
			if got := count(t, conn); got != uint64(n) {
				t.Fatalf("count = %d, want %d", got, n)
			}
		})
	}
	t.Cleanup(func() {
		close(addrs)
		seen := map[string]bool{}
		for a := range addrs {
			if seen[a] {
				t.Errorf("two servers on %s", a)
			}
			seen[a] = true
		}
	})
}

func TestTLSAndUsers(t *testing.T) {
	srv := clickhousetest.StartWith(t, clickhousetest.Options{
		TLS:   true,
		Users: []clickhousetest.User{{Name: "pagewatch", Password: "s3cret<&>"}},
	})
	pem, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", srv.CAFile)
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{srv.SecureAddr},
		Auth:        clickhouse.Auth{Database: "default", Username: "pagewatch", Password: "s3cret<&>"},
		TLS:         &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 18.16 has no currentUser(); the running query knows its user.
	const whoami = "SELECT user FROM system.processes WHERE query LIKE '%whoami-7d1%'"
	var user string
	if err := conn.QueryRow(context.Background(), whoami).Scan(&user); err != nil {
		t.Fatalf("query over TLS: %v", err)
	}
	if user != "pagewatch" {
		t.Fatalf("user = %q", user)
	}
	// The plain ports stay as they were.
	if got := srv.Query(t, "SELECT 1"); got != "1\n" {
		t.Fatalf("HTTP query = %q", got)
	}
	if err := open(t, srv, nil).Ping(context.Background()); err != nil {
		t.Fatalf("plain native port: %v", err)
	}
	// Restart keeps the certificate, so the client goes on trusting it.
	srv.Restart(t)
	if err := conn.QueryRow(context.Background(), whoami).Scan(&user); err != nil {
		t.Fatalf("query over TLS after restart: %v", err)
	}
}
