// Package clickhouse is pagewatch's store: it applies the schema, loads
// hits, answers the sweeper's count queries and keeps the crossing and
// notification history. Every statement it issues runs on ClickHouse 18.16
// and on current releases (proven by its tests on both).
//
// A Client is the connection: Open, Migrate, Ping, Close, and the
// synthetic loads of the benchmarks. What the stages read and write hangs
// off it by role, each the adapter of ports that stages declare, so that
// a stage is handed what it uses and no more (roles.go):
//
//	c.Hits()     inserts, old days dropped   load.Store, retention.Store
//	c.Counts()   counts judged, days sealed  sweep.Counter, report.Counts, report.Sealed
//	c.History()  crossings and outcomes      sweep.Recorder, notify.Recorder, console.HistoryStore
//	c.Traffic()  a page's views, for people  console.TrafficStore, notify.Stats, sweep.Explainer
//	c.Console()  History and Traffic as one  console.Store
//
// Roles are values over the Client: they share its pool and settings, and
// closing the Client is all there is to close. Files go by reader, not by
// role: console.go, stats.go and explain.go are the console's, the
// email's and the why's reads.
package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/config/tlsconfig"
)

// Config is the `clickhouse:` section.
type Config struct {
	Addr     []string     `yaml:"addr"`
	Database string       `yaml:"database"`
	Username string       `yaml:"username"`
	Password secret.Value `yaml:"password"`
	// TLS is for the secure native port (tcp_port_secure, usually 9440).
	// One server_name, when set, applies to every address.
	TLS         tlsconfig.Config `yaml:"tls"`
	DialTimeout time.Duration    `yaml:"dial_timeout"`
	// HTTPAddr, when set, is each server's HTTP interface (http_port,
	// usually 8123, or https_port, usually 8443, with tls), tried in
	// order: the loader then inserts hits over HTTP, in ClickHouse's
	// Native format encoded by pagewatch, at a fraction of the driver's
	// CPU per row (see native.go). Same database, user, password and TLS
	// as addr. Empty: everything goes over the native protocol.
	HTTPAddr []string `yaml:"http_addr"`
	// HTTPCompression is how those inserts are sent: lz4 (ClickHouse's
	// own framing, as the native protocol compresses) or none (less CPU
	// on both sides, for a loader on the server's host).
	HTTPCompression string `yaml:"http_compression"`
	// Migrate applies the embedded schema when a daemon starts. Turn it off
	// where the schema is managed by `sweeper migrate` alone.
	Migrate bool `yaml:"migrate"`
	// Cluster, when set, names a cluster of the servers' remote_servers:
	// the schema is then created ON CLUSTER as Replicated tables with
	// Distributed tables in front (see schema.Layout). Empty: one server.
	Cluster string `yaml:"cluster"`
	// ReplicationPath and Replica are the Replicated engines' arguments in
	// cluster mode. pagewatch expands {database} and {table} in the path;
	// {shard} and {replica} are the servers' <macros>.
	ReplicationPath string `yaml:"replication_path"`
	Replica         string `yaml:"replica"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	return Config{
		Addr:            []string{"127.0.0.1:9000"},
		Database:        "pagewatch",
		Username:        "default",
		DialTimeout:     5 * time.Second,
		HTTPCompression: compressionLZ4,
		Migrate:         true,
		ReplicationPath: "/clickhouse/tables/{shard}/{database}/{table}",
		Replica:         "{replica}",
	}
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Validate reports every problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	if len(c.Addr) == 0 {
		errs = append(errs, errors.New("clickhouse.addr: at least one host:port is needed"))
	}
	for i, a := range c.Addr {
		if a == "" {
			errs = append(errs, fmt.Errorf("clickhouse.addr[%d]: empty", i))
		}
	}
	if !identRE.MatchString(c.Database) {
		errs = append(errs, fmt.Errorf("clickhouse.database: must match %s, got %q", identRE, c.Database))
	}
	if c.Username == "" {
		errs = append(errs, errors.New("clickhouse.username: must be set"))
	}
	for i, a := range c.HTTPAddr {
		if _, _, err := net.SplitHostPort(a); err != nil || a == "" {
			errs = append(errs, fmt.Errorf("clickhouse.http_addr[%d]: want host:port, got %q", i, a))
		}
	}
	if c.HTTPCompression != compressionLZ4 && c.HTTPCompression != compressionNone {
		errs = append(errs, fmt.Errorf("clickhouse.http_compression: must be lz4 or none, got %q", c.HTTPCompression))
	}
	if c.DialTimeout <= 0 {
		errs = append(errs, fmt.Errorf("clickhouse.dial_timeout: must be positive, got %s", c.DialTimeout))
	}
	if err := c.Password.Err(); err != nil {
		errs = append(errs, fmt.Errorf("clickhouse.password: %w", err))
	}
	errs = append(errs, c.TLS.Validate("clickhouse.tls"))
	errs = append(errs, c.validateCluster()...)
	return errors.Join(errs...)
}

// Client is a connection pool to one ClickHouse database.
type Client struct {
	conn   driver.Conn
	cfg    Config
	logger *slog.Logger
	// insertSettings are sent with every batch insert. async_insert is
	// left out for servers that predate it (they reject unknown settings).
	insertSettings ch.Settings
	// http, when clickhouse.http_addr is set, takes the loader's inserts.
	http *httpInserter
	// bufs are the inserts', kept for the next insert.
	bufs buffers
	// maxLivePages is defaultMaxLivePages but in tests, which bound the
	// live view below the pages they load.
	maxLivePages int
	// sealed keeps the page_days half of recent window counts.
	sealed sealedCache
}

// codeUnknownDatabase is the exception code of a missing database.
const codeUnknownDatabase = 81

// Open connects, creating the database if it does not exist yet.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (*Client, error) {
	conn, err := dial(ctx, cfg, cfg.Database)
	var exc *ch.Exception
	if errors.As(err, &exc) && exc.Code == codeUnknownDatabase {
		if err := createDatabase(ctx, cfg); err != nil {
			return nil, err
		}
		conn, err = dial(ctx, cfg, cfg.Database)
	}
	if err != nil {
		return nil, err
	}
	c := &Client{conn: conn, cfg: cfg, logger: logger, maxLivePages: defaultMaxLivePages}
	v, err := conn.ServerVersion()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse server version: %w", err)
	}
	// pagewatch batches its own inserts; current servers would otherwise
	// buffer them again (async_insert is on by default from 26.2).
	c.insertSettings = ch.Settings{}
	if v.Version.Major > 21 || (v.Version.Major == 21 && v.Version.Minor >= 11) {
		c.insertSettings["async_insert"] = 0
	}
	if cfg.Cluster != "" {
		// A Distributed table otherwise queues the rows on this server's
		// disk and forwards them later: the loader would ack hits that
		// no shard holds yet.
		c.insertSettings["insert_distributed_sync"] = 1
	}
	if len(cfg.HTTPAddr) > 0 {
		if c.http, err = newHTTPInserter(cfg, c.insertSettings, &c.bufs); err != nil {
			conn.Close()
			return nil, err
		}
	}
	logger.Info("clickhouse connected", "addr", cfg.Addr, "http_addr", cfg.HTTPAddr, "tls", cfg.TLS.Enabled, "database", cfg.Database, "cluster", cfg.Cluster, "server", v.String())
	return c, nil
}

func dial(ctx context.Context, cfg Config, database string) (driver.Conn, error) {
	tlsCfg, err := cfg.TLS.Build()
	if err != nil {
		return nil, fmt.Errorf("clickhouse.tls.%w", err)
	}
	conn, err := ch.Open(&ch.Options{
		// nil: plain TCP. An empty ServerName is each address's host.
		TLS:  tlsCfg,
		Addr: cfg.Addr,
		Auth: ch.Auth{
			Database: database,
			Username: cfg.Username,
			Password: cfg.Password.Reveal(),
		},
		DialTimeout: cfg.DialTimeout,
		// Bounded, so a statement the server never answers fails instead of hanging.
		ReadTimeout: 2 * time.Minute,
		Compression: &ch.Compression{Method: ch.CompressionLZ4},
	})
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %v: %w", cfg.Addr, err)
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ping clickhouse %v database %s: %w", cfg.Addr, database, err)
	}
	return conn, nil
}

func createDatabase(ctx context.Context, cfg Config) error {
	conn, err := dial(ctx, cfg, "default")
	if err != nil {
		return err
	}
	defer conn.Close()
	// The names are validated (identRE, clusterRE), so quoting is safe.
	stmt := "CREATE DATABASE IF NOT EXISTS `" + cfg.Database + "`"
	if cfg.Cluster != "" {
		// On every host, or the migrations ON CLUSTER fail on the others.
		stmt += " ON CLUSTER `" + cfg.Cluster + "`"
	}
	if err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("create database %s: %w", cfg.Database, err)
	}
	return nil
}

// Close closes the pool.
func (c *Client) Close() error {
	if c.http != nil {
		c.http.client.CloseIdleConnections()
	}
	return c.conn.Close()
}

// Ping reports whether the server answers, for /readyz.
func (c *Client) Ping(ctx context.Context) error { return c.conn.Ping(ctx) }

func (c *Client) insertContext(ctx context.Context) context.Context {
	if len(c.insertSettings) == 0 {
		return ctx
	}
	return ch.Context(ctx, ch.WithSettings(c.insertSettings))
}

// sendColumns sends one block: each argument is a column's values, in
// the order the INSERT names them.
func (c *Client) sendColumns(ctx context.Context, query string, columns ...any) error {
	batch, err := c.conn.PrepareBatch(c.insertContext(ctx), query)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	for i, col := range columns {
		if err := batch.Column(i).Append(col); err != nil {
			_ = batch.Abort()
			return fmt.Errorf("column %d: %w", i, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}
