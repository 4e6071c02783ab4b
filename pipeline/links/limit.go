package links

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// The links' rate limit per caller address. A person uses a link a few
// times; a script replaying or guessing links is slowed to one request
// every linkEvery. Behind a proxy every caller has the proxy's address,
// and the limit is then one for all.
const (
	linkBurst  = 20
	linkEvery  = time.Second
	maxCallers = 10_000
)

// callers is a token bucket per caller address. It forgets every bucket
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

// allow takes a token from the caller's bucket, if it has one.
func (c *callers) allow(r *http.Request, now time.Time) bool {
	addr := r.RemoteAddr
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.buckets[addr]
	if !ok {
		if len(c.buckets) >= c.max {
			clear(c.buckets)
		}
		b = &bucket{tokens: c.burst, at: now}
		c.buckets[addr] = b
	}
	b.tokens = min(c.burst, b.tokens+float64(now.Sub(b.at))/float64(c.every))
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
