package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/sinks/webhook"
)

// hookServer is a webhook consumer on loopback: it verifies each
// request's signature as docs/receivers.md says and counts deliveries by
// their id.
type hookServer struct {
	srv    *httptest.Server
	secret string
	mu     sync.Mutex
	ids    map[string]int
	bad    []string
}

func startHook(t *testing.T, secret string) *hookServer {
	h := &hookServer{secret: secret, ids: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		h.mu.Lock()
		defer h.mu.Unlock()
		if err := webhook.Verify([]byte(h.secret), r.Header.Get(webhook.HeaderSignature), body, time.Now(), webhook.DefaultWindow); err != nil {
			h.bad = append(h.bad, err.Error())
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		h.ids[r.Header.Get(webhook.HeaderID)]++
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookServer) counts() (ids map[string]int, bad []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids = map[string]int{}
	for k, v := range h.ids {
		ids[k] = v
	}
	return ids, append([]string(nil), h.bad...)
}

// closedURL is an http URL where nothing listens.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr + "/hook"
}

// TestReceiversExactlyOnceWithWorkersKilled routes 200 crossings over 20
// pages to three receivers: email, a signed webhook, and a webhook that
// is down. Three worker processes run; one, at random, is SIGKILLed and
// restarted 8 times while the crossings arrive. Every crossing reaches
// email and the webhook; a second copy is allowed only for a send a
// worker made just before it was killed (it carries the same
// Message-ID or webhook id), and is counted. The receiver that is down
// holds nothing back: each of its deliveries is dead-lettered with the
// reason once its give_up_after (3 s) has passed.
func TestReceiversExactlyOnceWithWorkersKilled(t *testing.T) {
	const (
		workers     = 3
		concurrency = 2
		pages       = 20
		crossings   = 200
		kills       = 8
		lockTTL     = 3 * time.Second
		secret      = "e2e-webhook-secret-0123456789"
	)
	b := setupWith(t, setupOptions{
		rules: "    []", load: defaultLoad,
		worker: workerConfig{Concurrency: concurrency, Prefetch: 16, LockTTL: lockTTL.String(), DeferDelay: "200ms",
			AckWait: (2 * lockTTL).String(), DrainTimeout: "5s", NoRateLimit: true},
	})
	hook := startHook(t, secret)
	cfg, err := os.ReadFile(b.config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "worker:\n", "worker:\n  routing: {receivers: [email, hook, down]}\n", 1) + fmt.Sprintf(`receivers:
  - {name: email, type: email}
  - name: hook
    type: webhook
    webhook: {url: %q, secret: %q}
    rate_limit: {rate: 0, per: 0s, burst: 0}
  - name: down
    type: webhook
    webhook: {url: %q, secret: %q, attempts: 1, timeout: 1s}
    rate_limit: {rate: 0, per: 0s, burst: 0}
    give_up_after: 3s
`, hook.srv.URL+"/hook", secret, closedURL(t), secret)
	if err := os.WriteFile(b.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	c := b.jobsClient(t)
	procs, _ := b.startWorkers(t, workers)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 16))
	began := time.Now()
	jobs := map[string]crossing.Crossing{}
	var all []crossing.Crossing
	for i := 0; i < crossings; i++ {
		x := workerJob(i%pages, i/pages)
		jobs[x.Key] = x
		all = append(all, x)
	}
	published := make(chan struct{})
	go func() {
		defer close(published)
		for off := 0; off < len(all); off += 20 {
			for _, x := range all[off:min(off+20, len(all))] {
				if err := c.tryPublish(x); err != nil {
					t.Error(err)
					return
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	for k := 0; k < kills; k++ {
		time.Sleep(200*time.Millisecond + time.Duration(rng.IntN(500))*time.Millisecond)
		i := rng.IntN(workers)
		procs[i].kill()
		procs[i] = b.start(t, "worker", "run")
	}
	<-published

	// Email: every crossing, as the other worker tests check it.
	mails := b.waitJobsDone(t, c, jobs, 50*time.Second)
	st := checkMails(t, mails, jobs)
	if len(st.missing) > 0 {
		t.Errorf("%d crossings never mailed", len(st.missing))
	}
	// The webhook: every crossing, by its delivery id.
	testcheck.Eventually(t, 20*time.Second, "every crossing at the webhook", func() error {
		ids, _ := hook.counts()
		for key := range jobs {
			if ids[key+".to.hook"] == 0 {
				return fmt.Errorf("%d of %d delivered; %s is not", len(ids), len(jobs), key)
			}
		}
		return nil
	})
	ids, bad := hook.counts()
	hookDups := 0
	for id, n := range ids {
		if _, ok := jobs[strings.TrimSuffix(id, ".to.hook")]; !ok {
			t.Errorf("webhook delivery %q is for no published crossing", id)
		}
		hookDups += n - 1
	}
	if len(bad) > 0 {
		t.Errorf("%d webhook requests failed verification: %q", len(bad), bad[:min(3, len(bad))])
	}
	// Each kill may cut short, after the send and before the ledger
	// write, the sends its worker had in flight: one per runner and
	// receiver.
	if st.duplicates+hookDups > kills*concurrency*2 {
		t.Errorf("%d mail and %d webhook duplicates from %d kills", st.duplicates, hookDups, kills)
	}
	// The receiver that is down: every crossing dead-lettered, with the reason.
	reasons := deadLetterReasons(t, c, "down")
	for key := range jobs {
		r, ok := reasons[key]
		if !ok {
			t.Errorf("crossing %s was not dead-lettered for the receiver that is down", key)
			continue
		}
		if !strings.Contains(r, "gave up after 3s") || !strings.Contains(r, "connection refused") {
			t.Errorf("dead-letter reason for %s: %q", key, r)
		}
	}
	if n := c.pending(t); n != 0 {
		t.Errorf("%d jobs left in the stream", n)
	}
	t.Logf("%d crossings × 3 receivers, %d workers, %d SIGKILLs (seed %d): %d emails (%d duplicates), %d webhook deliveries (%d duplicates, same id), %d dead letters for the receiver that is down; done in %s",
		crossings, workers, kills, seed, len(mails), st.duplicates, len(ids)+hookDups, hookDups, len(reasons), time.Since(began).Round(time.Millisecond))
}

// deadLetterReasons reads the jobs' dead letters of one receiver:
// crossing key → reason.
func deadLetterReasons(t *testing.T, c *jobsClient, receiver string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.bus.DeadLetterStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{c.bus.DeadLetterSubject("jobs")}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for {
		batch, err := cons.FetchNoWait(500)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			if m.Headers().Get(bus.HeaderDeadReceiver) != receiver {
				continue
			}
			x, err := crossing.Unmarshal(m.Data())
			if err != nil {
				t.Fatal(err)
			}
			out[x.Key] = m.Headers().Get(bus.HeaderDeadReason)
		}
		if n == 0 {
			return out
		}
	}
}
