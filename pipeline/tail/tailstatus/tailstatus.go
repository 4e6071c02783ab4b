// Package tailstatus is what a tailer says of itself every few seconds (a
// heartbeat in NATS KV), and a reader of it for the console: the tailer
// writes records, and the console reads them without importing the
// tailer. Each record is replaced at every heartbeat; the bucket's TTL,
// a few heartbeats, makes a dead tailer's record vanish, and until then
// its age says it is silent.
package tailstatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
)

// Bucket is the heartbeats' bucket, as given to bus.KV (nats.prefix
// "_tailers" in JetStream): one key per tailer process.
const Bucket = "tailers"

// Interval is how often a tailer writes its record, and TTL how long a
// record lives unless rewritten: six heartbeats, so a tailer slowed by a
// busy NATS is not taken for gone, and one gone is no longer listed
// after half a minute.
const (
	Interval = 5 * time.Second
	TTL      = 6 * Interval
)

// SilentAfter is how old a record may grow before its tailer is called
// silent: three heartbeats missed.
func SilentAfter(interval time.Duration) time.Duration { return 3 * interval }

// Tailer is one tailer process's record.
type Tailer struct {
	Instance string    `json:"instance"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Version  string    `json:"version,omitempty"`
	Started  time.Time `json:"started"`
	At       time.Time `json:"at"` // when this record was written
	// Interval is the writer's heartbeat interval, so a reader knows
	// when the record is late whatever the writer was told.
	Interval time.Duration `json:"interval"`
	// Stopped is set by the last record of a tailer that stopped
	// cleanly: it is not silent, it was stopped.
	Stopped bool    `json:"stopped,omitempty"`
	Inputs  []Input `json:"inputs"`
}

// Kinds of input.
const (
	KindFile   = "file"
	KindStream = "stream" // stdin or syslog: nothing to be behind the end of
)

// Input is one file a tailer follows, or one stream it reads.
type Input struct {
	Kind string `json:"kind"`
	// Name is the file's real path, or the stream's name ("stdin",
	// "syslog-udp", "syslog-tcp").
	Name string `json:"name"`
	// Site is the site the input's hits are recorded under, "" when
	// each line's virtual host names it.
	Site string `json:"site,omitempty"`
	// Size is the file's size when last looked at, Offset how far it is
	// stored in JetStream, Behind the difference (an incomplete last
	// line included). A stream has no size: Offset is the bytes read.
	Size   int64 `json:"size"`
	Offset int64 `json:"offset"`
	Behind int64 `json:"behind"`
	// LastPublish is when a batch of it was last stored (a quiet file's
	// keepalive included); zero before the first.
	LastPublish time.Time `json:"last_publish,omitzero"`
	// UnpublishedSince is when the oldest line not yet published was
	// first seen; zero when every complete line is published.
	UnpublishedSince time.Time `json:"unpublished_since,omitzero"`
	// Lines are the lines read since the process started.
	Lines int64 `json:"lines"`
	// Standby: another tailer on the host holds the file's lease.
	Standby bool `json:"standby,omitempty"`
}

// Key is a tailer's key in the bucket: its instance, then a token of its
// host, so that tailers of one instance name on two hosts keep a record
// each, and a restarted tailer replaces its own.
func Key(instance, host string) string {
	return strings.Map(keyRune, instance) + "." + bus.Key(host)
}

// keyRune keeps what a KV key may hold; an instance name is checked by
// ingest.tail.instance already, this is for any other writer.
func keyRune(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		return r
	}
	return '_'
}

// maxRead bounds the records Read returns: a console page lists them all.
const maxRead = 500

// listTimeout bounds listing the bucket's keys. A record that expires
// (its TTL) while the keys are listed can leave the lister waiting for
// it for good: its watcher counted it pending when it began. That hung
// TestHeartbeat for 20 minutes in a CI rehearsal, and would hang the
// console's pipeline page.
const listTimeout = 5 * time.Second

// Read returns every tailer's record, by instance then host. A bucket no
// tailer has made yet reads as none.
func Read(ctx context.Context, b *bus.Bus) ([]Tailer, error) {
	kv, err := b.JS.KeyValue(ctx, b.BucketName(Bucket))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", Bucket, err)
	}
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	keys, err := kv.ListKeys(lctx)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", Bucket, err)
	}
	defer func() { _ = keys.Stop() }()
	var out []Tailer
	ch := keys.Keys()
	for {
		var k string
		select {
		case key, ok := <-ch:
			if !ok {
				return sorted(out), nil
			}
			k = key
		case <-lctx.Done():
			return nil, fmt.Errorf("bucket %s: listing its keys: %w (a record expiring while listed; read again)", Bucket, lctx.Err())
		}
		if len(out) >= maxRead {
			return sorted(out), nil
		}
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired since listed
		}
		if err != nil {
			return nil, fmt.Errorf("bucket %s key %s: %w", Bucket, k, err)
		}
		var t Tailer
		if err := json.Unmarshal(e.Value(), &t); err != nil {
			continue // a record of another version: not this reader's to judge
		}
		out = append(out, t)
	}
}

// sorted orders records by instance then host.
func sorted(out []Tailer) []Tailer {
	slices.SortFunc(out, func(a, b Tailer) int {
		return strings.Compare(a.Instance+"\x00"+a.Host, b.Instance+"\x00"+b.Host)
	})
	return out
}
