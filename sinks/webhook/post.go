// Package webhook delivers notifications over HTTP: a signed JSON
// webhook of pagewatch's own schema, and chat and push services' APIs,
// one kind of receiver a file, all listed in Blocks (registry.go). Each
// receiver is a notify.Receiver; they share one way of posting
// (post.go): a few attempts with backoff on 5xx and time-outs, 429's
// Retry-After honoured, other 4xx never retried.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// Common defaults of every HTTP receiver.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultAttempts = 3
	// maxInlineWait is the longest Retry-After a send sleeps through
	// itself; a longer one goes back to the queue for that long.
	maxInlineWait = 5 * time.Second
	// maxResponse bounds how much of a response is read.
	maxResponse = 64 << 10
	userAgent   = "pagewatch-webhook/1"
)

// HTTP is what every HTTP receiver's config shares.
type HTTP struct {
	// Timeout bounds one attempt: connecting, sending, the answer.
	Timeout time.Duration `yaml:"timeout"`
	// Attempts is how many times one send tries before the job goes back
	// to the queue (which retries with longer backoff).
	Attempts int `yaml:"attempts"`
}

func (h HTTP) withDefaults() HTTP {
	if h.Timeout <= 0 {
		h.Timeout = DefaultTimeout
	}
	if h.Attempts <= 0 {
		h.Attempts = DefaultAttempts
	}
	return h
}

func (h HTTP) validate(key string) error {
	var errs []error
	if h.Timeout < 0 || h.Timeout > 5*time.Minute {
		errs = append(errs, fmt.Errorf("%s.timeout: must be 0 (default %s) to 5m, got %s", key, DefaultTimeout, h.Timeout))
	}
	if h.Attempts < 0 || h.Attempts > 10 {
		errs = append(errs, fmt.Errorf("%s.attempts: must be 0 (default %d) to 10, got %d", key, DefaultAttempts, h.Attempts))
	}
	return errors.Join(errs...)
}

// checkURL validates an endpoint; the URL itself is never printed (it
// often holds the webhook's token).
func checkURL(key, raw string) error {
	if raw == "" {
		return fmt.Errorf("%s: must be set", key)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%s: must be an http(s) URL with a host", key)
	}
	return nil
}

// poster posts one request with retries. It is safe for concurrent use.
type poster struct {
	client   *http.Client
	attempts int
	// service names the receiver in errors ("slack receiver ops").
	service string
}

func newPoster(service string, h HTTP) *poster {
	h = h.withDefaults()
	return &poster{
		client: &http.Client{
			Timeout: h.Timeout,
			// A webhook that redirects is misconfigured; following it
			// would turn the POST into a GET somewhere else.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		attempts: h.Attempts,
		service:  service,
	}
}

// answer is what a service's response means, as its check decides.
type answer struct {
	ok bool
	// retryAfter > 0: the service asked to wait (429).
	retryAfter time.Duration
	// permanent: no retry can help.
	permanent bool
	err       error
}

// checkFunc reads a service's response into an answer. The default
// (checkStatus) goes by the status code alone.
type checkFunc func(status int, header http.Header, body []byte) answer

// post sends body to endpoint: up to attempts times on 5xx, time-outs and
// network errors, with backoff; a 429 waits its Retry-After when that is
// short, and otherwise returns it to the caller (notify.RetryAfter).
// newReq builds each attempt's request (a signature carries a time).
func (p *poster) post(ctx context.Context, newReq func() (*http.Request, error), check checkFunc) error {
	var last error
	waited := false // the service's own wait replaces the backoff
	for attempt := 0; attempt < p.attempts; attempt++ {
		if attempt > 0 && !waited {
			if err := retry.Sleep(ctx, retry.Delay(attempt-1, 500*time.Millisecond, 5*time.Second)); err != nil {
				return fmt.Errorf("%s: %w (after %w)", p.service, err, last)
			}
		}
		waited = false
		a := p.once(ctx, newReq, check)
		if a.ok {
			return nil
		}
		last = a.err
		switch {
		case a.permanent:
			return notify.Permanent(fmt.Errorf("%s: %w", p.service, a.err))
		case a.retryAfter > 0:
			if a.retryAfter > maxInlineWait || attempt == p.attempts-1 {
				return notify.RetryAfter(fmt.Errorf("%s: %w", p.service, a.err), a.retryAfter)
			}
			if err := retry.Sleep(ctx, a.retryAfter); err != nil {
				return fmt.Errorf("%s: %w", p.service, err)
			}
			waited = true
		}
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("%s: %w", p.service, last)
}

func (p *poster) once(ctx context.Context, newReq func() (*http.Request, error), check checkFunc) answer {
	req, err := newReq()
	if err != nil {
		return answer{permanent: true, err: err}
	}
	req = req.WithContext(ctx)
	req.Header.Set("User-Agent", userAgent)
	resp, err := p.client.Do(req)
	if err != nil {
		return answer{err: scrub(err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	return check(resp.StatusCode, resp.Header, body)
}

// scrub drops the URL from a transport error: it may hold a token.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("%s: timed out: %w", ue.Op, ue.Err)
		}
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// checkStatus is the plain reading of a response: 2xx is done, 429 waits
// for Retry-After, 408 and 5xx are retried, other codes are permanent.
func checkStatus(status int, header http.Header, body []byte) answer {
	switch {
	case status >= 200 && status < 300:
		return answer{ok: true}
	case status == http.StatusTooManyRequests:
		return answer{retryAfter: parseRetryAfter(header.Get("Retry-After"), time.Now()), err: statusError(status, body)}
	case status == http.StatusRequestTimeout || status >= 500:
		return answer{err: statusError(status, body)}
	default:
		return answer{permanent: true, err: statusError(status, body)}
	}
}

// statusError says what came back, with the start of the body.
func statusError(status int, body []byte) error {
	snippet := strings.TrimSpace(string(body))
	if len(snippet) > 200 {
		snippet = snippet[:200] + "…"
	}
	snippet = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, snippet)
	if snippet == "" {
		return fmt.Errorf("HTTP %d", status)
	}
	return fmt.Errorf("HTTP %d: %s", status, snippet)
}

// defaultRetryAfter is the wait for a 429 that does not say how long.
const defaultRetryAfter = time.Second

// parseRetryAfter reads Retry-After: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return defaultRetryAfter
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return clampWait(time.Duration(s * float64(time.Second)))
	}
	if t, err := http.ParseTime(v); err == nil {
		return clampWait(t.Sub(now))
	}
	return defaultRetryAfter
}

// clampWait keeps a service's wait between a millisecond and an hour.
func clampWait(d time.Duration) time.Duration {
	return min(max(d, time.Millisecond), time.Hour)
}

// jsonRequest makes a POST of a JSON body.
func jsonRequest(endpoint string, body []byte, header http.Header) func() (*http.Request, error) {
	return func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			return nil, errors.New("bad endpoint URL") // never the URL: it may hold a token
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	}
}
