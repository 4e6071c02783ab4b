package tail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/lock"
	"github.com/pagewatch/pagewatch/broker/retry"
)

// One publisher per file.
//
// Two tailers with different instance names following one file would
// publish its lines twice, each on its own subject. So a follower reads
// and publishes only while it holds the file's lease (pipeline/lock, in
// bus.BucketTailLeases, TTL ingest.tail.lease_ttl); the others stand by
// and try again every lease_ttl/2. The lease is keyed by the host name
// and the file's real path (absolute, symlinks resolved), not by the
// instance: what must be exclusive is the file, whoever reads it, and
// the instance is exactly what differs between the tailers in question.
// A path names a file on one host only, hence the host name: the same
// path on two hosts is two files, both to be followed. Tailers on
// different hosts reading one file over NFS (or containers with their own
// host names sharing a log directory) have different keys and are not
// kept apart; each must be given its own files.
//
// Takeover keeps counts exact because the file's subject is shared, not
// per holder. bus.BucketTailFiles records, per file (the lease's key), the
// instance and path of the tailer that first published it; every holder
// publishes on the subject they name, so the one taking over finds the
// last holder's position as its own, and the subject's
// expected-last-sequence check that already serializes two processes of
// one instance also fences a holder that lost its lease but still has a
// publish in flight: that publish fails, and the old holder reads the
// position afresh, as it does after any resync. For one tailer per file,
// the record names its own instance and path: the subject it always had.
// A record is rewritten every hits_max_age/4 by the holder and lapses
// after nats.hits_max_age, as the position it leads to does.

// releaseTimeout bounds the release of a lease at shutdown: a lease not
// released lapses after lease_ttl anyway.
const releaseTimeout = 2 * time.Second

// holder is a tailer process as its leases name it.
type holder struct {
	instance, host string
	pid            int
	pidns          string // the pid namespace: where pid means this process
}

func (h holder) String() string {
	return fmt.Sprintf("instance=%s host=%s pid=%d pidns=%s", h.instance, h.host, h.pid, h.pidns)
}

// parseHolder reads a lease's value back, without lock's per-lease nonce.
func parseHolder(value string) (holder, bool) {
	if i := strings.LastIndexByte(value, '/'); i >= 0 {
		value = value[:i]
	}
	var h holder
	for _, f := range strings.Fields(value) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "instance":
			h.instance = v
		case "host":
			h.host = v
		case "pid":
			h.pid, _ = strconv.Atoi(v)
		case "pidns":
			h.pidns = v
		}
	}
	return h, h.host != "" && h.pid > 0 && h.pidns != ""
}

// gone reports whether other is a process of h's host, in h's pid
// namespace (h is this process), that no longer runs. Only then can its
// lease be taken before it lapses; a holder anywhere else is waited for.
func (h holder) gone(other holder) bool {
	if other.host != h.host || other.pidns != h.pidns || h.pidns == "" || other.pid == h.pid {
		return false
	}
	err := syscall.Kill(other.pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

// setupLeases opens the lease and record buckets and names this process.
func (fs *fileSetup) setupLeases(ctx context.Context, cfg Config, b *bus.Bus) error {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	ns, _ := os.Readlink("/proc/self/ns/pid") // "" where there is none: never taken as gone
	fs.self = holder{instance: cfg.Instance, host: strings.ReplaceAll(host, " ", "_"), pid: os.Getpid(), pidns: ns}
	if fs.leases, err = b.KV(ctx, bus.BucketTailLeases, cfg.LeaseTTL); err != nil {
		return fmt.Errorf("tail leases: %w", err)
	}
	if fs.records, err = b.KV(ctx, bus.BucketTailFiles, b.HitsMaxAge()); err != nil {
		return fmt.Errorf("tail file records: %w", err)
	}
	return nil
}

// fileLease is the layer of a file's follower that keeps it the file's
// only publisher: the lease itself, and the record of the subject the
// file is published on, which every holder shares.
type fileLease struct {
	fs        *fileSetup
	logger    *slog.Logger
	path      string // the input's path
	instance  string // ours
	ttl       time.Duration
	timeout   time.Duration // of a record write
	keepalive time.Duration // the record is rewritten this often
	glob      bool          // a glob's file: gone means ended (errGone)

	key      string     // of the lease and the record
	rec      fileRecord // whose subject the file is published on
	recordAt time.Time  // when rec was last written
}

func newFileLease(fs *fileSetup, cfg Config, path string, glob bool, keepalive time.Duration, logger *slog.Logger) *fileLease {
	return &fileLease{fs: fs, logger: logger, path: path, instance: cfg.Instance, ttl: cfg.LeaseTTL,
		timeout: cfg.PublishTimeout, keepalive: keepalive, glob: glob}
}

// held reports whether leases are in use: not without file inputs.
func (l *fileLease) held() bool { return l.fs.leases != nil }

// fileLeaseKey names a file of this host: the host name and its absolute
// path with symlinks resolved, so that two tailers spelling the path
// differently (through a symlinked directory) share the lease. A file
// that does not exist yet is named through its directory.
func fileLeaseKey(host, path string) string {
	p := absPath(path)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	} else if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(d, filepath.Base(p))
	}
	return bus.Key(host, p)
}

// acquire takes the file's lease, waiting while another holds it. It
// returns errGone for a glob's file that is gone. standby is called when
// it starts waiting: it returns errBackfillDone to give up instead (a
// backfill-only run does not wait for a file another tailer holds).
func (l *fileLease) acquire(ctx context.Context, onLost func(), standby func(holder string) error) (*lock.Lease, error) {
	fs := l.fs
	waiting := false
	defer func() {
		if waiting {
			fs.fm.standby.Dec()
		}
	}()
	var goneSince time.Time
	for attempt := 0; ; {
		l.key = fileLeaseKey(fs.self.host, l.path)
		lease, err := lock.Acquire(ctx, fs.leases, l.key, fs.self.String(), l.ttl, onLost)
		if err == nil {
			if waiting {
				l.logger.Info("the file's lease is free; taking the file over")
			}
			return lease, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		wait := l.ttl / 2
		var held *lock.HeldError
		switch {
		case errors.As(err, &held):
			attempt = 0
			if l.takeStale(ctx) {
				continue
			}
			if !waiting {
				l.logger.Info("another tailer follows this file; standing by", "holder", held.Holder, "retry_every", wait)
				if err := standby(held.Holder); err != nil {
					return nil, err
				}
				waiting = true
				fs.fm.standby.Inc()
			}
		default:
			l.logger.Warn("taking the file's lease failed; retrying", "err", err, "attempt", attempt+1)
			wait = retry.Delay(attempt, 100*time.Millisecond, 5*time.Second)
			attempt++
		}
		if l.glob {
			// A gone file is not waited for: its path is reported again
			// if it comes back.
			if _, err := os.Stat(l.path); err == nil {
				goneSince = time.Time{}
			} else if goneSince.IsZero() {
				goneSince = time.Now()
			} else if time.Since(goneSince) > fs.linger {
				return nil, errGone
			}
		}
		if err := retry.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// takeStale deletes the file's lease if its holder is a process of this
// host that is gone (killed, crashed): a restarted tailer then goes on at
// once instead of after lease_ttl. It reports whether it did.
func (l *fileLease) takeStale(ctx context.Context) bool {
	kv := l.fs.leases
	e, err := kv.Get(ctx, l.key)
	if err != nil {
		return false // released meanwhile, or NATS away: the next attempt tells
	}
	h, ok := parseHolder(string(e.Value()))
	if !ok || !l.fs.self.gone(h) {
		return false
	}
	// Conditional on the revision read: a lease renewed or taken since is
	// left alone.
	if err := kv.Delete(ctx, l.key, jetstream.LastRevision(e.Revision())); err != nil {
		return false
	}
	l.logger.Info("the file's lease was held by a process of this host that is gone; taking the file over", "holder", h.String())
	return true
}

// fileRecord names the subject a file is published on: that of the
// instance and path that first published it.
type fileRecord struct {
	Instance string `json:"instance"`
	Path     string `json:"path"`
}

// resolve reads the file's record, recording our own when there is
// none, and returns it: the instance and path the file's subjects are
// named by. Without leases that is ours.
func (l *fileLease) resolve(ctx context.Context) (fileRecord, error) {
	own := fileRecord{Instance: l.instance, Path: l.path}
	if l.fs.records == nil {
		return own, nil
	}
	if l.key == "" {
		l.key = fileLeaseKey(l.fs.self.host, l.path)
	}
	rec, err := retrying(ctx, l.logger, "read the file's subject record", func() (fileRecord, error) { return l.readRecord(ctx, own) })
	if err != nil {
		return own, err
	}
	if rec != own && rec != l.rec {
		l.logger.Info("publishing the file on the subject it has been published on by another instance, where its position is",
			"instance", rec.Instance, "as_path", rec.Path)
	}
	l.rec = rec
	l.recordAt = time.Now()
	return rec, nil
}

// subjectOwner is the instance and path the file's subjects are named by:
// the record's once resolved, else ours.
func (l *fileLease) subjectOwner() (instance, path string) {
	if l.rec.Instance != "" {
		return l.rec.Instance, l.rec.Path
	}
	return l.instance, l.path
}

var errRecordGone = errors.New("record lapsed while read")

func (l *fileLease) readRecord(ctx context.Context, own fileRecord) (fileRecord, error) {
	kv := l.fs.records
	data, err := json.Marshal(own)
	if err != nil {
		return own, err
	}
	_, err = kv.Create(ctx, l.key, data)
	if err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
		return own, err
	}
	e, err := kv.Get(ctx, l.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return own, errRecordGone
	}
	if err != nil {
		return own, err
	}
	var rec fileRecord
	if json.Unmarshal(e.Value(), &rec) != nil || !instanceRE.MatchString(rec.Instance) || rec.Path == "" {
		// Not a record pagewatch wrote: replace it rather than build a
		// subject from it.
		_, err := kv.Update(ctx, l.key, data, e.Revision())
		return own, err
	}
	return rec, nil
}

// refreshRecord rewrites the file's record, so it lives as long as the
// positions on its subject, which the follower's publishes keep alive.
func (l *fileLease) refreshRecord(ctx context.Context) {
	if l.recordAt.IsZero() || time.Since(l.recordAt) < l.keepalive {
		return
	}
	data, err := json.Marshal(l.rec)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, l.timeout)
		_, err = l.fs.records.Put(pctx, l.key, data)
		cancel()
	}
	if err != nil {
		l.logger.Warn("rewriting the file's subject record failed; trying again in a minute", "err", err)
		l.recordAt = time.Now().Add(time.Minute - l.keepalive)
		return
	}
	l.recordAt = time.Now()
}

// release gives the lease back at shutdown, so that a tailer standing by
// takes over within lease_ttl/2 rather than after the TTL.
func (l *fileLease) release(ctx context.Context, lease *lock.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := lease.Release(rctx); err != nil {
		l.logger.Warn("releasing the file's lease failed; it lapses after lease_ttl", "err", err)
	}
}
