package tail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
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

// gone reports whether h is a process of this host, in our pid
// namespace, that no longer runs. Only then can its lease be taken
// before it lapses; a holder anywhere else is waited for.
func (self holder) gone(h holder) bool {
	if h.host != self.host || h.pidns != self.pidns || self.pidns == "" || h.pid == self.pid {
		return false
	}
	err := syscall.Kill(h.pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

func (t *Tailer) setupLeases(ctx context.Context) error {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	ns, _ := os.Readlink("/proc/self/ns/pid") // "" where there is none: never taken as gone
	t.files.self = holder{instance: t.cfg.Instance, host: strings.ReplaceAll(host, " ", "_"), pid: os.Getpid(), pidns: ns}
	if t.files.leases, err = t.bus.KV(ctx, bus.BucketTailLeases, t.cfg.LeaseTTL); err != nil {
		return err
	}
	t.files.records, err = t.bus.KV(ctx, bus.BucketTailFiles, t.bus.HitsMaxAge())
	return err
}

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

// run follows the file while it holds the file's lease, standing by while
// another tailer of the host holds it, until ctx is done.
func (fw *follower) run(ctx context.Context) error {
	if fw.files.leases == nil {
		return fw.work(ctx)
	}
	for {
		lctx, cancel := context.WithCancel(ctx)
		var lost atomic.Bool
		lease, err := fw.acquire(ctx, func() {
			// Stop publishing at once: another tailer may have the file.
			lost.Store(true)
			cancel()
		})
		if err != nil {
			cancel()
			if errors.Is(err, errBackfillDone) {
				return nil
			}
			return err
		}
		err = fw.resolveSubject(lctx)
		if err == nil {
			err = fw.work(lctx)
		}
		cancel()
		// Released at shutdown, so that a tailer standing by takes over
		// within lease_ttl/2 rather than after the TTL.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		if rerr := lease.Release(rctx); rerr != nil {
			fw.logger.Warn("releasing the file's lease failed; it lapses after lease_ttl", "err", rerr)
		}
		rcancel()
		if !lost.Load() || ctx.Err() != nil {
			return err
		}
		fw.files.fm.lost.Inc()
		fw.logger.Warn("lost the file's lease (NATS unreachable for lease_ttl, or taken by another tailer); stopped publishing, standing by")
		if fw.leaveBackfill() {
			return nil
		}
	}
}

// leaveBackfill gives up the input's part in a backfill: the tailer
// holding the file publishes it. It reports whether the follower is to
// end (a backfill-only run).
func (fw *follower) leaveBackfill() bool {
	fw.tasks = nil
	if fw.backfill == nil || fw.caughtUp {
		return false
	}
	fw.catchUpDone()
	return fw.backfill.opts.Only
}

// acquire takes the file's lease, waiting while another holds it. It
// returns errGone for a glob's file that is gone, and errBackfillDone in
// a backfill-only run that finds the file held.
func (fw *follower) acquire(ctx context.Context, onLost func()) (*lock.Lease, error) {
	fs := &fw.files
	standby := false
	defer func() {
		if standby {
			fs.fm.standby.Dec()
		}
	}()
	var goneSince time.Time
	for attempt := 0; ; {
		fw.leaseKey = fileLeaseKey(fs.self.host, fw.in.Path)
		l, err := lock.Acquire(ctx, fs.leases, fw.leaseKey, fs.self.String(), fw.cfg.LeaseTTL, onLost)
		if err == nil {
			if standby {
				fw.logger.Info("the file's lease is free; taking the file over")
			}
			return l, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		wait := fw.cfg.LeaseTTL / 2
		var held *lock.HeldError
		switch {
		case errors.As(err, &held):
			attempt = 0
			if fw.takeStale(ctx) {
				continue
			}
			if !standby {
				fw.logger.Info("another tailer follows this file; standing by", "holder", held.Holder, "retry_every", wait)
				if fw.leaveBackfill() {
					fw.logger.Warn("file not backfilled: another tailer follows it", "holder", held.Holder)
					return nil, errBackfillDone
				}
				standby = true
				fs.fm.standby.Inc()
			}
		default:
			fw.logger.Warn("taking the file's lease failed; retrying", "err", err, "attempt", attempt+1)
			wait = retry.Delay(attempt, 100*time.Millisecond, 5*time.Second)
			attempt++
		}
		if fw.glob {
			// A gone file is not waited for: its path is reported again
			// if it comes back.
			if _, err := os.Stat(fw.in.Path); err == nil {
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
func (fw *follower) takeStale(ctx context.Context) bool {
	kv := fw.files.leases
	e, err := kv.Get(ctx, fw.leaseKey)
	if err != nil {
		return false // released meanwhile, or NATS away: the next attempt tells
	}
	h, ok := parseHolder(string(e.Value()))
	if !ok || !fw.files.self.gone(h) {
		return false
	}
	// Conditional on the revision read: a lease renewed or taken since is
	// left alone.
	if err := kv.Delete(ctx, fw.leaseKey, jetstream.LastRevision(e.Revision())); err != nil {
		return false
	}
	fw.logger.Info("the file's lease was held by a process of this host that is gone; taking the file over", "holder", h.String())
	return true
}

// fileRecord names the subject a file is published on: that of the
// instance and path that first published it.
type fileRecord struct {
	Instance string `json:"instance"`
	Path     string `json:"path"`
}

// resolveSubject sets the follower's subject from the file's record,
// recording its own when there is none.
func (fw *follower) resolveSubject(ctx context.Context) error {
	if fw.files.records == nil {
		return nil
	}
	if fw.leaseKey == "" {
		fw.leaseKey = fileLeaseKey(fw.files.self.host, fw.in.Path)
	}
	own := fileRecord{Instance: fw.cfg.Instance, Path: fw.in.Path}
	rec, err := retrying(ctx, fw, "read the file's subject record", func() (fileRecord, error) { return fw.readRecord(ctx, own) })
	if err != nil {
		return err
	}
	if rec != own && rec != fw.pub {
		fw.logger.Info("publishing the file on the subject it has been published on by another instance, where its position is",
			"instance", rec.Instance, "as_path", rec.Path)
	}
	fw.pub = rec
	fw.subject = fw.bus.HitsSubject(rec.Instance, bus.Key(rec.Path))
	fw.recordAt = time.Now()
	return nil
}

var errRecordGone = errors.New("record lapsed while read")

func (fw *follower) readRecord(ctx context.Context, own fileRecord) (fileRecord, error) {
	kv := fw.files.records
	data, err := json.Marshal(own)
	if err != nil {
		return own, err
	}
	_, err = kv.Create(ctx, fw.leaseKey, data)
	if err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
		return own, err
	}
	e, err := kv.Get(ctx, fw.leaseKey)
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
		_, err := kv.Update(ctx, fw.leaseKey, data, e.Revision())
		return own, err
	}
	return rec, nil
}

// refreshRecord rewrites the file's record, so it lives as long as the
// positions on its subject, which the follower's publishes keep alive.
func (fw *follower) refreshRecord(ctx context.Context) {
	if fw.recordAt.IsZero() || time.Since(fw.recordAt) < fw.keepalive {
		return
	}
	data, err := json.Marshal(fw.pub)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, fw.cfg.PublishTimeout)
		_, err = fw.files.records.Put(pctx, fw.leaseKey, data)
		cancel()
	}
	if err != nil {
		fw.logger.Warn("rewriting the file's subject record failed; trying again in a minute", "err", err)
		fw.recordAt = time.Now().Add(time.Minute - fw.keepalive)
		return
	}
	fw.recordAt = time.Now()
}
