package silence_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/pipeline/silence"
)

type setupBundle struct {
	store *silence.Store
	url   string // the API's base URL
}

func setup(t *testing.T) setupBundle {
	t.Helper()
	logger := testenv.Logger(t)
	b, _ := testenv.NATS(t, logger)
	store := silence.New(b, logger)
	srv := httptest.NewServer(silence.API(store, nil))
	t.Cleanup(srv.Close)
	return setupBundle{store: store, url: srv.URL + silence.APIPrefix}
}

func post(t *testing.T, url, contentType, origin, body string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A page on another site can make the browser POST a form (text/plain,
// no preflight) to a loopback API: such a request must change nothing.
// Only JSON from no foreign origin is taken, and no silence outlasts
// MaxFor.
func TestAPIRefusesCrossSiteAndOverlongSilences(t *testing.T) {
	b := setup(t)
	body := `{"match":{"site":"example.com"},"duration":"1h","author":"mallory"}`
	for _, c := range []struct {
		name, ct, origin, body string
		want                   int
	}{
		{"a cross-site form post", "text/plain", "https://evil.example", body, http.StatusForbidden},
		{"text/plain without an origin", "text/plain", "", body, http.StatusUnsupportedMediaType},
		{"no content type", "", "", body, http.StatusUnsupportedMediaType},
		{"JSON from a foreign origin", "application/json", "https://evil.example", body, http.StatusForbidden},
		{"ten years", "application/json", "", strings.Replace(body, "1h", "87600h", 1), http.StatusBadRequest},
		{"starting in a year", "application/json", "", `{"match":{"site":"example.com"},"starts_at":"` +
			time.Now().Add(365*24*time.Hour).UTC().Format(time.RFC3339) + `","duration":"1h","author":"a"}`, http.StatusBadRequest},
	} {
		if got := post(t, b.url, c.ct, c.origin, c.body); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	if all, err := b.store.List(t.Context()); err != nil || len(all) != 0 {
		t.Fatalf("refused requests stored silences: %+v, %v", all, err)
	}
	if got := post(t, b.url, "application/json; charset=utf-8", "", body); got != http.StatusCreated {
		t.Fatalf("a JSON request: status %d, want 201", got)
	}
	all, _ := b.store.List(t.Context())
	if len(all) != 1 {
		t.Fatalf("%d silences, want 1", len(all))
	}
	if got := post(t, b.url+"/"+all[0].ID+"/expire", "text/plain", "https://evil.example", ""); got != http.StatusForbidden {
		t.Errorf("a cross-site expire: status %d, want 403", got)
	}
}

// A silence added twice under one ID (a snooze link used again) is one
// silence, and the first stands.
func TestAddUnderAGivenIDIsIdempotent(t *testing.T) {
	b := setup(t)
	now := time.Now()
	sl := silence.Silence{ID: "snooze-0123456789abcdef", Match: crossing.Match{Site: "example.com", Rule: "r"},
		EndsAt: now.Add(time.Hour), Author: "a@example.com"}
	first, err := b.store.Add(t.Context(), sl, now)
	if err != nil {
		t.Fatal(err)
	}
	sl.EndsAt = now.Add(2 * time.Hour)
	again, err := b.store.Add(t.Context(), sl, now.Add(time.Minute))
	if err != nil || again.ID != first.ID || !again.EndsAt.Equal(first.EndsAt) {
		t.Fatalf("again: %+v, %v; want the first, %+v", again, err, first)
	}
	if all, _ := b.store.List(t.Context()); len(all) != 1 {
		t.Fatalf("%d silences, want 1", len(all))
	}
}

// Silences that ended more than KeepEnded ago are purged, so ended ones
// never fill the store; recent and active ones stay.
func TestPurgeDeletesLongEndedSilences(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	long := time.Now().Add(-silence.KeepEnded - 2*time.Hour)
	for i, at := range []time.Time{long, long, time.Now().Add(-time.Hour), time.Now()} {
		sl, err := b.store.Add(ctx, silence.Silence{Match: crossing.Match{Site: "s"}, StartsAt: at, EndsAt: at.Add(time.Hour), Author: "a"}, at)
		if err != nil {
			t.Fatalf("silence %d: %v", i, err)
		}
		if _, err := b.store.Expire(ctx, sl.ID, at.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := b.store.Purge(ctx, time.Now())
	if err != nil || n != 2 {
		t.Fatalf("purged %d, %v; want 2", n, err)
	}
	if all, _ := b.store.List(ctx); len(all) != 2 {
		t.Fatalf("%d silences left, want 2", len(all))
	}
}
