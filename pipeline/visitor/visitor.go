// Package visitor gives each hit a client key, so that visitors can be
// counted as well as hits, without keeping anything that identifies a
// person: the key is a keyed hash of the client's address and user agent,
// and the key of the hash (the salt) is random, one per UTC day, and
// deleted two days after it was made. Within a day, one address and user
// agent have one key; across days, keys say nothing of each other, and
// once the salt is gone nobody (pagewatch included) can tell which
// address a key came from. Plausible and Fathom count visitors the same
// way. The address and user agent stay in the tailer's memory: only the
// 64-bit key goes on. docs/privacy.md says this for the people asking.
//
// The salt is shared through a NATS KV bucket (Bucket), so every tailer
// hashes a client alike on a day: the first tailer to need a day's salt
// makes it (32 bytes from crypto/rand) and stores it with a create that
// only one writer can win; the others read it. The bucket's TTL deletes
// it two days later (SaltTTL).
//
// A line is hashed with the salt of its own UTC day, not of the day it is
// read: a backfill of old lines gives each the key it would have had when
// live, as long as the bucket still holds that day's salt. Lines of a day
// older than that (a backfill from weeks ago) get a salt made now for
// that day, which the TTL deletes two days later like any other: their
// keys agree with each other, not with the keys given when the day was
// live (which no longer exist anywhere but in stored hits).
//
// The hash is SipHash-2-4, a PRF made for short inputs under a secret key
// (64-bit output, 128-bit key), at about 70 ns for a typical address and
// user agent; see BenchmarkKey.
package visitor

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/dchest/siphash"
)

// NoKey is the client key of a hit that has none (visitors not counted,
// or no salt could be had): Key never returns it.
const NoKey uint64 = 0

// maxKeptBuf is the largest scratch buffer a Keyer keeps between calls;
// a rare huge user agent is hashed in a buffer then dropped.
const maxKeptBuf = 4 << 10

// Keyer makes client keys. It is not safe for concurrent use: give each
// goroutine that reads lines its own (they are cheap; the salts are
// shared through the Salts they come from).
type Keyer struct {
	salts *Salts
	cur   *salt // the salt of the last day hashed
	buf   []byte
}

// Keyer returns a new Keyer using s's salts.
func (s *Salts) Keyer() *Keyer { return &Keyer{salts: s} }

// Key returns the client key of a hit at t (the line's time) from addr
// (the client address, as logged) and userAgent. Only the first lookup of
// each day's salt goes to NATS (a few milliseconds); the rest is
// hashing. Key fails only when it cannot get the salt of t's day by ctx's
// end: NATS unreachable on a day not yet looked up. Give ctx a deadline
// unless waiting for NATS is what the caller wants.
//
// The key is never NoKey: a hash of 0 is given as 1, which merges 2^-64
// of clients with another.
func (k *Keyer) Key(ctx context.Context, t time.Time, addr, userAgent []byte) (uint64, error) {
	if t.IsZero() {
		// A year-1 salt would be made and kept, for nothing.
		return NoKey, errors.New("visitor: a hit without a time has no day")
	}
	day := dayOf(t)
	s := k.cur
	if s == nil || s.day != day || s.dropped.Load() {
		var err error
		if s, err = k.salts.get(ctx, day); err != nil {
			return NoKey, err
		}
		k.cur = s
	}
	// The address's length first, so that ("ab", "c") and ("a", "bc")
	// are different inputs; the user agent's length is what is left.
	k.buf = binary.AppendUvarint(k.buf[:0], uint64(len(addr)))
	k.buf = append(k.buf, addr...)
	k.buf = append(k.buf, userAgent...)
	h := siphash.Hash(s.k0, s.k1, k.buf)
	if cap(k.buf) > maxKeptBuf {
		k.buf = nil
	}
	if h == NoKey {
		h = 1
	}
	return h, nil
}
