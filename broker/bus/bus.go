// Package bus connects to NATS and declares the JetStream streams and
// key-value buckets that the pagewatch daemons share. Names live here, in
// one place, so the tailer, loader, sweeper and worker cannot disagree.
package bus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Close drains nothing: callers stop their consumers first.
func (b *Bus) Close() { b.Conn.Close() }

// Ping reports whether NATS is reachable, for /readyz, and fails while a
// stream or bucket the daemon needs is still waiting to be created (a
// cluster with a node down), saying why, or is gone.
func (b *Bus) Ping(ctx context.Context) error {
	if !b.Conn.IsConnected() {
		return fmt.Errorf("nats: %s", b.Conn.Status())
	}
	if err := b.waits.err(); err != nil {
		return err
	}
	if err := b.Conn.FlushWithContext(ctx); err != nil {
		return err
	}
	return b.waits.gone(ctx, b.JS)
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

// JobsSubjectPrefix is what every jobs subject starts with.
func (b *Bus) JobsSubjectPrefix() string { return b.cfg.Prefix + ".jobs." }

// HitsSubjectFilter matches every subject of the hits stream.
func (b *Bus) HitsSubjectFilter() string { return b.cfg.Prefix + ".hits.>" }

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
	// HeaderDeadReceiver names the receiver a notification job's dead
	// letter is about: the job's other receivers may have delivered.
	HeaderDeadReceiver = "Pagewatch-Dead-Receiver"
)

// DeadLetterStream creates or updates the dead-letter stream.
func (b *Bus) DeadLetterStream(ctx context.Context) (jetstream.Stream, error) {
	s, err := createWithRetry(ctx, b, "stream "+b.DeadLetterStreamName(), func(ctx context.Context) (jetstream.Stream, error) {
		return b.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
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
	})
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", b.DeadLetterStreamName(), err)
	}
	b.waits.created(b.DeadLetterStreamName())
	return s, nil
}

// HitsStream creates or updates the hits stream.
func (b *Bus) HitsStream(ctx context.Context) (jetstream.Stream, error) {
	s, err := createWithRetry(ctx, b, "stream "+b.HitsStreamName(), func(ctx context.Context) (jetstream.Stream, error) {
		return b.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:        b.HitsStreamName(),
			Description: "pagewatch page hits, one subject per tailed file",
			Subjects:    []string{b.cfg.Prefix + ".hits.>"},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      b.cfg.HitsMaxAge,
			Storage:     jetstream.FileStorage,
			Replicas:    b.cfg.Replicas,
			Duplicates:  2 * time.Minute,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", b.HitsStreamName(), err)
	}
	b.waits.created(b.HitsStreamName())
	return s, nil
}

// JobsStream creates or updates the notification work queue.
func (b *Bus) JobsStream(ctx context.Context) (jetstream.Stream, error) {
	s, err := createWithRetry(ctx, b, "stream "+b.JobsStreamName(), func(ctx context.Context) (jetstream.Stream, error) {
		return b.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
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
	})
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", b.JobsStreamName(), err)
	}
	b.waits.created(b.JobsStreamName())
	return s, nil
}

// Bucket names.
const (
	BucketLocks = "locks" // per-page worker leases
	BucketSent  = "sent"  // (crossing, receiver) deliveries done
	// BucketHeld holds crossings inside a receiver's quiet hours, until
	// the digest sent when they end.
	BucketHeld = "held"
	// BucketSilences holds the silences, one key per silence ID.
	BucketSilences = "silences"
	BucketSweeps   = "sweeps" // sweeper state per rule and page
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
	// BucketUnsubscribes holds one key per (rule, recipient) that used
	// an email's unsubscribe link.
	BucketUnsubscribes = "unsubscribes"
	// BucketReports holds one key per scheduled report and period, claimed
	// by the replica that sends it.
	BucketReports = "reports"
	// BucketRetention holds one key per retention period, claimed by the
	// loader that drops old raw hits in it.
	BucketRetention = "retention"
)

// BucketName is the JetStream name of one of pagewatch's buckets (name
// as given to KV): nats.prefix, "_", name.
func (b *Bus) BucketName(name string) string { return b.cfg.Prefix + "_" + name }

// KV creates or opens the named bucket. ttl > 0 makes entries lapse unless
// rewritten, which is what turns a lock into a lease.
func (b *Bus) KV(ctx context.Context, name string, ttl time.Duration) (jetstream.KeyValue, error) {
	bucket := b.BucketName(name)
	kv, err := createWithRetry(ctx, b, "kv bucket "+bucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		return b.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:   bucket,
			TTL:      ttl,
			Storage:  jetstream.FileStorage,
			Replicas: b.cfg.Replicas,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("create kv bucket %s: %w", bucket, err)
	}
	b.waits.created("KV_" + bucket)
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
