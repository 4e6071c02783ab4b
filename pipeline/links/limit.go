package links

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// The links' rate limit: per link for a valid one, per caller address
// for the rest. A person uses a link a few times; a script replaying a
// link, or sending made-up ones, is slowed to one request every
// linkEvery. Behind a proxy every caller has the proxy's address, and
// the limit on made-up links is then one for all; a valid link keeps
// its own.
const (
	linkBurst  = 20
	linkEvery  = time.Second
	maxCallers = 10_000
)

// callers is a token bucket per key (a link, or a caller's address). It forgets every bucket
// when it would hold more than max of them: an attacker with many
// addresses gets a fresh burst each, no memory beyond max.
type callers struct {
	burst float64
	every time.Duration
	max   int

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newCallers(burst int, every time.Duration, most int) *callers {
	return &callers{burst: float64(burst), every: every, max: most, buckets: map[string]*bucket{}}
}

// callerAddr is the request's peer address, without its port.
func callerAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// allow takes a token from key's bucket, if it has one.
func (c *callers) allow(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.buckets[key]
	if !ok {
		if len(c.buckets) >= c.max {
			clear(c.buckets)
		}
		b = &bucket{tokens: c.burst, at: now}
		c.buckets[key] = b
	}
	b.tokens = min(c.burst, b.tokens+float64(now.Sub(b.at))/float64(c.every))
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
