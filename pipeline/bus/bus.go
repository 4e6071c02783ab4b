// Package bus connects to NATS and declares the JetStream streams and
// key-value buckets that the pagewatch daemons share. Names live here, in
// one place, so the tailer, loader, sweeper and worker cannot disagree.
package bus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/config/secret"
)

// Config is the `nats:` section.
type Config struct {
	URL            string        `yaml:"url"`
	User           string        `yaml:"user"`
	Password       secret.Value  `yaml:"password"`
	Token          secret.Value  `yaml:"token"`
	CredsFile      string        `yaml:"creds_file"`
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// Prefix namespaces every subject, stream and bucket, so two
	// pagewatch installations can share one NATS account.
	Prefix   string `yaml:"prefix"`
	Replicas int    `yaml:"replicas"`
	// HitsMaxAge is how long hits stay in JetStream, loaded or not: the
	// longest loader or ClickHouse outage that loses nothing, the window in
	// which ClickHouse can be rebuilt by replay, and how long a stopped
	// tailer finds its position again.
	HitsMaxAge time.Duration `yaml:"hits_max_age"`
	// DeadLetterMaxAge is how long a message that could not be processed
	// stays in the dead-letter stream for someone to inspect or replay.
	DeadLetterMaxAge time.Duration `yaml:"dead_letter_max_age"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	return Config{
		URL:            nats.DefaultURL,
		ConnectTimeout: 5 * time.Second,
		Prefix:         "pagewatch",
		Replicas:       1,
		HitsMaxAge:     72 * time.Hour,
		// Long enough to notice and act on over a holiday.
		DeadLetterMaxAge: 30 * 24 * time.Hour,
	}
}

var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Validate reports the first problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("nats.url: must be set, e.g. nats://127.0.0.1:4222"))
	}
	if c.ConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("nats.connect_timeout: must be positive, got %s", c.ConnectTimeout))
	}
	if !prefixRE.MatchString(c.Prefix) {
		errs = append(errs, fmt.Errorf("nats.prefix: must match %s, got %q", prefixRE, c.Prefix))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("nats.replicas: must be 1..5, got %d", c.Replicas))
	}
	if c.HitsMaxAge < time.Hour {
		errs = append(errs, fmt.Errorf("nats.hits_max_age: must be at least 1h, got %s", c.HitsMaxAge))
	}
	if c.DeadLetterMaxAge < time.Hour {
		errs = append(errs, fmt.Errorf("nats.dead_letter_max_age: must be at least 1h, got %s", c.DeadLetterMaxAge))
	}
	if c.Password.IsSet() && c.User == "" {
		errs = append(errs, errors.New("nats.password: set without nats.user"))
	}
	return errors.Join(errs...)
}

// Bus is a NATS connection with JetStream, plus the names derived from the config.
type Bus struct {
	Conn *nats.Conn
	JS   jetstream.JetStream
	cfg  Config
}

// Connect dials NATS. The client keeps reconnecting forever: JetStream
// is the pipeline's buffer, and a daemon that gave up on it would only be
// restarted to try again.
func Connect(ctx context.Context, cfg Config, name string, logger *slog.Logger) (*Bus, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.Timeout(cfg.ConnectTimeout),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: our own Close
				logger.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			logger.Info("nats reconnected", "url", c.ConnectedUrlRedacted())
		}),
	}
	if cfg.User != "" {
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password.Reveal()))
	}
	if cfg.Token.IsSet() {
		opts = append(opts, nats.Token(cfg.Token.Reveal()))
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats %s: %w", redactURL(cfg.URL), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	b := &Bus{Conn: nc, JS: js, cfg: cfg}
	// RetryOnFailedConnect returns before the first connection; wait for it
	// so start-up errors surface here rather than as timeouts later.
	warnAt := time.Now().Add(cfg.ConnectTimeout)
	for !nc.IsConnected() {
		if !warnAt.IsZero() && time.Now().After(warnAt) {
			logger.Warn("nats not reachable yet; still trying", "url", redactURL(cfg.URL))
			warnAt = time.Time{}
		}
		select {
		case <-ctx.Done():
			nc.Close()
			return nil, fmt.Errorf("connect to nats %s: %w", redactURL(cfg.URL), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return b, nil
}

// Close drains nothing: callers stop their consumers first.
func (b *Bus) Close() { b.Conn.Close() }

// Ping reports whether NATS is reachable, for /readyz.
func (b *Bus) Ping(ctx context.Context) error {
	if !b.Conn.IsConnected() {
		return fmt.Errorf("nats: %s", b.Conn.Status())
	}
	return b.Conn.FlushWithContext(ctx)
}

// HitsMaxAge is how long a hit stays in the hits stream.
func (b *Bus) HitsMaxAge() time.Duration { return b.cfg.HitsMaxAge }

// HitsStreamName is the stream holding published hits.
func (b *Bus) HitsStreamName() string { return upper(b.cfg.Prefix) + "_HITS" }

// HitsSubject is the subject for one tailed file of one tailer instance.
// One subject per file lets the tailer keep its position as the last
// message on that subject.
func (b *Bus) HitsSubject(instance, fileKey string) string {
	return b.cfg.Prefix + ".hits." + instance + "." + fileKey
}

// JobsStreamName is the work-queue stream of notification jobs.
func (b *Bus) JobsStreamName() string { return upper(b.cfg.Prefix) + "_JOBS" }

// JobsSubject is the subject of jobs for one page (pageKey from Key).
func (b *Bus) JobsSubject(pageKey string) string { return b.cfg.Prefix + ".jobs." + pageKey }

// HandoffSubject is where a worker process takes jobs for a page it has
// locked from other worker processes (core NATS request-reply). worker is
// the worker's name; it is hashed, as names may hold any character.
func (b *Bus) HandoffSubject(worker string) string { return b.cfg.Prefix + ".handoff." + Key(worker) }

// DeadLetterStreamName is the stream of messages that could not be
// processed, kept with the reason for a person to look at.
func (b *Bus) DeadLetterStreamName() string { return upper(b.cfg.Prefix) + "_DEAD" }

// DeadLetterSubject is the subject for dead letters of one kind ("hits",
// "jobs").
func (b *Bus) DeadLetterSubject(kind string) string { return b.cfg.Prefix + ".dead." + kind }

// Headers of a dead letter, beside the original message's own.
const (
	HeaderDeadReason  = "Pagewatch-Dead-Reason"
	HeaderDeadSubject = "Pagewatch-Dead-Subject"  // where the message was
	HeaderDeadSeq     = "Pagewatch-Dead-Sequence" // its stream sequence there
)

// DeadLetterStream creates or updates the dead-letter stream.
func (b *Bus) DeadLetterStream(ctx context.Context) (jetstream.Stream, error) {
	s, err := b.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        b.DeadLetterStreamName(),
		Description: "pagewatch messages that could not be processed, with the reason",
		Subjects:    []string{b.cfg.Prefix + ".dead.>"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      b.cfg.DeadLetterMaxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    b.cfg.Replicas,
		// Message IDs name the source message: dead-lettering it again
		// after a crash stores it once.
		Duplicates: 10 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", b.DeadLetterStreamName(), err)
	}
	return s, nil
}

// HitsStream creates or updates the hits stream.
func (b *Bus) HitsStream(ctx context.Context) (jetstream.Stream, error) {
	s, err := b.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        b.HitsStreamName(),
		Description: "pagewatch page hits, one subject per tailed file",
		Subjects:    []string{b.cfg.Prefix + ".hits.>"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      b.cfg.HitsMaxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    b.cfg.Replicas,
		Duplicates:  2 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", b.HitsStreamName(), err)
	}
	return s, nil
}

// JobsStream creates or updates the notification work queue.
func (b *Bus) JobsStream(ctx context.Context) (jetstream.Stream, error) {
	s, err := b.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        b.JobsStreamName(),
		Description: "pagewatch notification jobs, one per threshold crossing",
		Subjects:    []string{b.cfg.Prefix + ".jobs.>"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    b.cfg.Replicas,
		// Crossing keys are the message IDs: a sweeper that republishes a
		// crossing within this window is deduplicated by the server.
		Duplicates: 10 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", b.JobsStreamName(), err)
	}
	return s, nil
}

// Bucket names.
const (
	BucketLocks  = "locks"  // per-page worker leases
	BucketSent   = "sent"   // crossing keys already mailed
	BucketSweeps = "sweeps" // sweeper state per rule and page
	// BucketSweeperLease holds the sweeper replicas' leader lease; its
	// TTL is the lease.
	BucketSweeperLease = "sweeper_lease"
	// BucketRateLimits holds the mail rate limits' state, one key per
	// limited thing (the SMTP account, each recipient).
	BucketRateLimits = "ratelimits"
	// BucketTailLeases holds one lease per followed file, so two tailers
	// on one host never both publish a file; its TTL is the lease.
	BucketTailLeases = "tail_leases"
	// BucketTailFiles records, per followed file, the subject its lines
	// are published on, so whichever tailer holds the file's lease goes on
	// where the last holder stopped. Its TTL is nats.hits_max_age: a
	// record lives as long as the positions it points to.
	BucketTailFiles = "tail_files"
)

// KV creates or opens the named bucket. ttl > 0 makes entries lapse unless
// rewritten, which is what turns a lock into a lease.
func (b *Bus) KV(ctx context.Context, name string, ttl time.Duration) (jetstream.KeyValue, error) {
	bucket := b.cfg.Prefix + "_" + name
	kv, err := b.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:   bucket,
		TTL:      ttl,
		Storage:  jetstream.FileStorage,
		Replicas: b.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("create kv bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// Key turns arbitrary strings (a site and a path written by strangers) into
// a token that is safe in a subject or KV key, and stable across processes.
func Key(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// RedactURL hides credentials embedded in a NATS URL.
func RedactURL(u string) string { return redactURL(u) }

var userinfoRE = regexp.MustCompile(`//[^@/]*@`)

// redactURL hides credentials embedded in a NATS URL.
func redactURL(u string) string { return userinfoRE.ReplaceAllString(u, "//[redacted]@") }
