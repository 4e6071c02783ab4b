package console

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// loginFrom tries a login as a browser at addr would, through a proxy
// when xff is set (addr is then the proxy's).
func loginFrom(t *testing.T, b *bundle, addr, xff, user, password string) *httptest.ResponseRecorder {
	t.Helper()
	h := b.s.Handler()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/login", nil)
	req.RemoteAddr = addr + ":40000"
	page := httptest.NewRecorder()
	h.ServeHTTP(page, req)
	form := url.Values{"user": {user}, "password": {password}, "csrf": {csrfOf(t, page.Body.String())}}
	req = httptest.NewRequest(http.MethodPost, "http://127.0.0.1/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = addr + ":40000"
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	for _, c := range page.Result().Cookies() {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Failures count against a name from one address: a guesser elsewhere
// does not lock alice out.
func TestLoginLimitIsPerNameAndAddress(t *testing.T) {
	b := setup(t, nil)
	for i := 0; i < 5; i++ {
		loginFrom(t, b, "203.0.113.1", "", "alice", "wrong")
	}
	if rec := loginFrom(t, b, "203.0.113.1", "", "alice", "wrong"); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("6th failure from the guesser's address: %d, Retry-After %q; want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := loginFrom(t, b, "203.0.113.2", "", "alice", "pw-alice"); rec.Code != http.StatusSeeOther {
		t.Errorf("alice from another address with her password: %d, want 303", rec.Code)
	}
}

// Behind a proxy every login comes from its address: trusted_proxies
// says whose X-Forwarded-For to read, and the rightmost address not a
// trusted proxy's is the client, whatever the client wrote to its left.
func TestLoginLimitBehindAProxy(t *testing.T) {
	b := setup(t, func(c *Config) { c.TrustedProxies = []string{"10.0.0.0/8", "192.168.1.1"} })
	// 25 failures under 25 names from one client, through both proxies.
	for i := 0; i < 25; i++ {
		loginFrom(t, b, "10.0.0.5", "198.51.100.66, 192.168.1.1", "user"+strconv.Itoa(i), "wrong")
	}
	if rec := loginFrom(t, b, "10.0.0.5", "198.51.100.66", "alice", "pw-alice"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the sprayer itself: %d, want 429", rec.Code)
	}
	if rec := loginFrom(t, b, "10.0.0.5", "198.51.100.77, 192.168.1.1", "alice", "pw-alice"); rec.Code != http.StatusSeeOther {
		t.Errorf("alice through the proxy after another client's 25 failures: %d, want 303", rec.Code)
	}
	// Addresses written to the left of the proxy's own are the client's
	// words: they do not make it someone else.
	for i := 0; i < 5; i++ {
		loginFrom(t, b, "10.0.0.5", "203.0.113."+strconv.Itoa(i)+", 198.51.100.88", "bob", "wrong")
	}
	if rec := loginFrom(t, b, "10.0.0.5", "203.0.113.99, 198.51.100.88", "bob", "wrong"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("6th failure for bob from one client, its left entries varied: %d, want 429", rec.Code)
	}
	// From a peer that is not a trusted proxy the header is not read.
	for i := 0; i < 5; i++ {
		loginFrom(t, b, "203.0.113.50", "198.51.100."+strconv.Itoa(i), "bob", "wrong")
	}
	if rec := loginFrom(t, b, "203.0.113.50", "198.51.100.200", "bob", "wrong"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("6th failure from an untrusted peer varying X-Forwarded-For: %d, want 429", rec.Code)
	}
}

// Tries sent at the same moment are limited as tries one after another
// are: of 60 wrong passwords for one name from one address at once, the
// first 5 are checked and the rest wait (checking, then counting, let
// all 60 through).
func TestLoginLimitHoldsForABurstAtOnce(t *testing.T) {
	b := setup(t, nil)
	codes := make(chan int, 60)
	var wg sync.WaitGroup
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- loginFrom(t, b, "203.0.113.1", "", "alice", "wrong").Code
		}()
	}
	wg.Wait()
	close(codes)
	n := map[int]int{}
	for c := range codes {
		n[c]++
	}
	if n[http.StatusUnauthorized] != 5 || n[http.StatusTooManyRequests] != 55 {
		t.Errorf("60 wrong passwords at once: %v, want 5 checked (401) and 55 limited (429)", n)
	}
	// A right password is refunded: it leaves the address's count as it was.
	if rec := loginFrom(t, b, "203.0.113.9", "", "bob", "pw-bob"); rec.Code != http.StatusSeeOther {
		t.Fatalf("bob: %d, want 303", rec.Code)
	}
	if _, ok := b.s.addrLimit.entries[keyOf("addr", limitAddr(netip.MustParseAddr("203.0.113.9")))]; ok {
		t.Error("a login with the right password counted against its address")
	}
}

// A right password leaves its address's failures as they were: it does
// not restart the wait of the others behind that address, nor keep the
// address's count from being forgotten.
func TestLoginSuccessLeavesTheAddressAsItWas(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	b := setup(t, nil, func(d *Deps) { d.Now = func() time.Time { return now } })
	for i := range 20 { // the address's free failures, under 20 names
		loginFrom(t, b, "203.0.113.1", "", "user"+strconv.Itoa(i), "wrong")
	}
	now = now.Add(2 * time.Second) // past the 1 s the 20th asks
	if rec := loginFrom(t, b, "203.0.113.1", "", "alice", "pw-alice"); rec.Code != http.StatusSeeOther {
		t.Fatalf("alice: %d, want 303", rec.Code)
	}
	if rec := loginFrom(t, b, "203.0.113.1", "", "bob", "wrong"); rec.Code != http.StatusUnauthorized {
		t.Errorf("bob right after alice's login: %d, want 401 (checked, not made to wait again)", rec.Code)
	}
	now = now.Add(61 * time.Minute)
	loginFrom(t, b, "203.0.113.1", "", "alice", "pw-alice")
	if f := b.s.addrLimit.entries[keyOf("addr", limitAddr(netip.MustParseAddr("203.0.113.1")))]; f.n > 1 {
		t.Errorf("an hour after its last failure the address still counts %d", f.n)
	}
}

// After the free failures each try waits a delay that doubles: a person
// who mistyped waits seconds, a guesser ever longer.
func TestLoginDelaysGrow(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	b := setup(t, nil, func(d *Deps) { d.Now = func() time.Time { return now } })
	for i := 0; i < 5; i++ {
		loginFrom(t, b, "203.0.113.1", "", "alice", "wrong")
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		rec := loginFrom(t, b, "203.0.113.1", "", "alice", "wrong")
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("failure %d at once: %d, want 429", 6+i, rec.Code)
		}
		now = now.Add(want - time.Millisecond)
		if rec := loginFrom(t, b, "203.0.113.1", "", "alice", "wrong"); rec.Code != http.StatusTooManyRequests {
			t.Errorf("failure %d just before %s: %d, want 429", 6+i, want, rec.Code)
		}
		now = now.Add(time.Millisecond)
		if rec := loginFrom(t, b, "203.0.113.1", "", "alice", "wrong"); rec.Code != http.StatusUnauthorized {
			t.Errorf("failure %d after %s: %d, want 401 (tried)", 6+i, want, rec.Code)
		}
	}
	// The right password, once the delay is over, logs in.
	now = now.Add(8 * time.Second)
	if rec := loginFrom(t, b, "203.0.113.1", "", "alice", "pw-alice"); rec.Code != http.StatusSeeOther {
		t.Errorf("alice after the delay: %d, want 303", rec.Code)
	}
}

// The limiter's keys are of one size whatever the name, and it holds a
// bounded number of them whatever the number of names and addresses.
func TestLimiterIsBounded(t *testing.T) {
	b := setup(t, nil)
	loginFrom(t, b, "203.0.113.1", "", strings.Repeat("a", 15<<10), "wrong")
	for k := range b.s.pairLimit.entries {
		if len(k) > 32 {
			t.Errorf("a limiter key of %d bytes", len(k))
		}
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	l := newLimiter(5, func() time.Time { return now })
	for i := 0; i < 3*limiterMaxKeys; i++ {
		l.take(keyOf("user", strconv.Itoa(i), "203.0.113.1"))
		if i%1000 == 0 {
			now = now.Add(time.Second)
		}
	}
	if n := len(l.entries); n > limiterMaxKeys {
		t.Errorf("the limiter holds %d keys after %d names", n, 3*limiterMaxKeys)
	}
	// The newest, still counting, are kept.
	if _, ok := l.entries[keyOf("user", strconv.Itoa(3*limiterMaxKeys-1), "203.0.113.1")]; !ok {
		t.Error("the newest key was evicted")
	}
}

func TestTrustedProxiesValidate(t *testing.T) {
	c := DefaultConfig()
	c.Auth = AuthNone
	c.TrustedProxies = []string{"10.0.0.0/8", "192.168.1.1", "::1", "fd00::/8", "proxy.example"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `console.trusted_proxies[4]: "proxy.example" is neither an address nor a CIDR`) {
		t.Errorf("got %v, want it to name console.trusted_proxies[4]", err)
	}
	c.TrustedProxies = c.TrustedProxies[:4]
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}
