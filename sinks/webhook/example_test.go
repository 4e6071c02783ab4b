package webhook_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/sinks/webhook"
)

// verifyingHandler is the receiving end docs/receivers.md gives: read the
// raw body (at most 1 MiB), check the signature over it and the replay
// window, and only then decode it.
func verifyingHandler(secret []byte, handle func(webhook.Payload)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read error", http.StatusBadRequest)
			return
		}
		err = webhook.Verify(secret, r.Header.Get(webhook.HeaderSignature), body, time.Now(), webhook.DefaultWindow)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p webhook.Payload
		if err := decode(body, &p); err != nil || p.Schema != webhook.Schema {
			http.Error(w, "not a pagewatch v1 notification", http.StatusBadRequest)
			return
		}
		handle(p) // deduplicate on p.ID: a retry repeats it
		w.WriteHeader(http.StatusNoContent)
	})
}

func ExampleVerify() {
	secret := []byte("0123456789abcdef-webhook")
	srv := httptest.NewServer(verifyingHandler(secret, func(p webhook.Payload) {
		fmt.Println(p.Crossing.Path, "passed", p.Crossing.Threshold)
	}))
	defer srv.Close()

	body := []byte(`{"schema":"pagewatch.notification/v1","id":"pricing.1","receiver":"hooks","crossing":{"key":"pricing.1","rule":"pricing","site":"example.com","path":"/pricing","count":1001,"threshold":1000,"window":"1h","crossed_at":"2026-03-29T01:30:00Z"}}`)
	post := func(sig string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set(webhook.HeaderSignature, sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println(post(webhook.Sign(secret, time.Now(), body)))
	fmt.Println(post(webhook.Sign([]byte("another secret, 16+ bytes"), time.Now(), body)))
	fmt.Println(post(webhook.Sign(secret, time.Now().Add(-10*time.Minute), body)))
	// Output:
	// /pricing passed 1000
	// 204
	// 401
	// 401
}

// The verifier refuses a tampered body, signature or timestamp, a
// timestamp outside the window either way, and a header that is missing
// or malformed; it takes a valid one among several (secret rotation).
func TestVerifierRefusesTamperingAndReplays(t *testing.T) {
	secret := []byte(hookSecret)
	body := []byte(`{"schema":"pagewatch.notification/v1","id":"a"}`)
	now := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	good := webhook.Sign(secret, now, body)
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := strings.TrimPrefix(good, "t="+ts+",v1=")
	flip := func(s string) string {
		b := []byte(s)
		if b[0] == 'a' {
			b[0] = 'b'
		} else {
			b[0] = 'a'
		}
		return string(b)
	}
	cases := []struct {
		name   string
		header string
		body   []byte
		at     time.Time
		ok     bool
	}{
		{"valid", good, body, now, true},
		{"valid at the window's edge", good, body, now.Add(webhook.DefaultWindow), true},
		{"valid among others", "t=" + ts + ",v1=" + flip(sig) + ",v1=" + sig, body, now, true},
		{"body tampered", good, append([]byte(nil), append(body[:len(body)-1], ' ', '}')...), now, false},
		{"signature tampered", "t=" + ts + ",v1=" + flip(sig), body, now, false},
		{"timestamp changed", "t=" + strconv.FormatInt(now.Unix()+1, 10) + ",v1=" + sig, body, now, false},
		{"too old", good, body, now.Add(webhook.DefaultWindow + time.Second), false},
		{"from the future", good, body, now.Add(-webhook.DefaultWindow - time.Second), false},
		{"other secret", webhook.Sign([]byte("another secret, 16+ bytes"), now, body), body, now, false},
		{"no header", "", body, now, false},
		{"no timestamp", "v1=" + sig, body, now, false},
		{"no signature", "t=" + ts, body, now, false},
	}
	for _, c := range cases {
		err := webhook.Verify(secret, c.header, c.body, c.at, webhook.DefaultWindow)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok %v", c.name, err, c.ok)
		}
	}
}
