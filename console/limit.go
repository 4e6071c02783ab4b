package console

import (
	"crypto/sha256"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// limiter slows password guessing down without locking anyone out for
// long: a key's first free failures cost nothing, and then each try must
// wait a delay after its last failure that doubles with every failure
// more (1s, 2s, 4s, ... up to maxDelay). A key forgets its failures once
// forget has passed since its last.
//
// The login counts failures per (name, address), so a guesser elsewhere
// never slows alice down, and per address, so one address trying many
// names is slowed too. Keys are hashes of fixed size (a name may be 16 KB
// long), and at most maxKeys are held: beyond, the forgotten go first,
// then the longest quiet among a sample, so a flood of new names and
// addresses costs bounded memory.
type limiter struct {
	mu       sync.Mutex
	free     int
	maxDelay time.Duration
	forget   time.Duration
	maxKeys  int
	entries  map[limitKey]failures
	swept    time.Time
	now      func() time.Time
}

type limitKey [16]byte

type failures struct {
	n    int
	last time.Time
}

// keyOf hashes parts into a limiter key.
func keyOf(parts ...string) limitKey {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var k limitKey
	copy(k[:], h.Sum(nil))
	return k
}

// limiterMaxKeys bounds each limiter: some 100 bytes a key.
const limiterMaxKeys = 50_000

func newLimiter(free int, now func() time.Time) *limiter {
	return &limiter{free: free, maxDelay: 15 * time.Minute, forget: time.Hour, maxKeys: limiterMaxKeys,
		entries: map[limitKey]failures{}, now: now}
}

// delay is what a key with n failures waits after its last.
func (l *limiter) delay(n int) time.Duration {
	if n < l.free {
		return 0
	}
	if n-l.free >= 30 {
		return l.maxDelay
	}
	return min(time.Second<<(n-l.free), l.maxDelay)
}

// take is, for a try about to be checked, how long the key must wait
// first (0: now); a key that need not wait is charged a failure before
// the password is checked, so tries sent at the same moment each see
// the ones before them (checking first and counting after, a burst of
// 60 all saw a wait of 0 and all were checked). A try that succeeds is
// refunded with the charge take returns.
func (l *limiter) take(k limitKey) (time.Duration, charge) {
	l.mu.Lock()
	defer l.mu.Unlock()
	before, had := l.entries[k]
	if had {
		if d := before.last.Add(l.delay(before.n)).Sub(l.now()); d > 0 {
			return d, charge{}
		}
	}
	l.failLocked(k)
	return 0, charge{key: k, before: before, had: had, at: l.entries[k].last, ok: true}
}

// charge is a failure take counted, to refund.
type charge struct {
	key    limitKey
	before failures // the key's failures before it
	had    bool
	at     time.Time // its time: the key's last failure, unless another came since
	ok     bool
}

// refund undoes a take whose try succeeded, or was not made: the key is
// as it was before, unless another failure was charged since, which
// then stays the last (a success must neither restart the wait of
// others behind the same address nor keep its count from being
// forgotten).
func (l *limiter) refund(c charge) {
	if !c.ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.entries[c.key]
	switch {
	case !ok:
	case f.last.Equal(c.at) && f.n == c.before.n+1 && c.had:
		l.entries[c.key] = c.before
	case f.n <= 1:
		delete(l.entries, c.key)
	default:
		f.n--
		l.entries[c.key] = f
	}
}

func (l *limiter) failLocked(k limitKey) {
	now := l.now()
	f, ok := l.entries[k]
	if ok && now.Sub(f.last) > l.forget {
		f = failures{}
	}
	if !ok && len(l.entries) >= l.maxKeys {
		l.evict(now)
	}
	l.entries[k] = failures{n: f.n + 1, last: now}
}

// reset forgets a key's failures: its login succeeded.
func (l *limiter) reset(k limitKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, k)
}

// evict makes room for a key: it drops the forgotten keys (a full sweep,
// at most once a minute), and when none were, the quietest of a sample.
func (l *limiter) evict(now time.Time) {
	if now.Sub(l.swept) >= time.Minute || now.Before(l.swept) {
		l.swept = now
		for k, f := range l.entries {
			if now.Sub(f.last) > l.forget {
				delete(l.entries, k)
			}
		}
		if len(l.entries) < l.maxKeys {
			return
		}
	}
	var (
		oldest limitKey
		at     time.Time
		seen   int
	)
	for k, f := range l.entries { // map order is random: a sample
		if seen == 0 || f.last.Before(at) {
			oldest, at = k, f.last
		}
		if seen++; seen == 16 {
			break
		}
	}
	delete(l.entries, oldest)
}

// clientAddr is the address a login came from: the peer's, or, when the
// peer is a trusted proxy, the rightmost address in X-Forwarded-For that
// is not a trusted proxy's. Entries further left were written by the
// client, who may write anything; an entry that is no address stops the
// walk at the proxy that passed it on.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	addr := addrOf(r.RemoteAddr)
	if !isTrusted(addr, trusted) {
		return addr
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a := addrOf(strings.TrimSpace(hops[i]))
		if !a.IsValid() {
			break
		}
		addr = a
		if !isTrusted(a, trusted) {
			break
		}
	}
	return addr
}

// addrOf reads an address, with or without a port.
func addrOf(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if a.IsValid() && p.Contains(a) {
			return true
		}
	}
	return false
}

// limitAddr is the address as the limiter counts it: an IPv6 host
// usually holds a whole /64, so its addresses count as one.
func limitAddr(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
