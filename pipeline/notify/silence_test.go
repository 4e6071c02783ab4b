package notify_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/silence"
)

func apiCall(t *testing.T, method, url string, body any, want int) []byte {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, out.String(), want)
	}
	return out.Bytes()
}

// Silences made through the API stop exactly the crossings they match,
// which are recorded as silenced; after one is expired, its crossings are
// sent again.
func TestSilenceStopsExactlyTheMatchingCrossings(t *testing.T) {
	b := setup(t)
	store, err := silence.Open(t.Context(), b.bus, b.logger)
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(silence.API(store, nil))
	t.Cleanup(api.Close)
	base := api.URL + silence.APIPrefix

	// Refused: no matcher, no author, an end before the start.
	apiCall(t, "POST", base, map[string]any{"duration": "1h", "author": "ann"}, 400)
	apiCall(t, "POST", base, map[string]any{"match": map[string]any{"site": "x"}, "duration": "1h"}, 400)
	apiCall(t, "POST", base, map[string]any{"match": map[string]any{"site": "x"}, "author": "ann",
		"starts_at": time.Now().Add(time.Hour), "ends_at": time.Now()}, 400)

	var byPage, byLabel silence.Silence
	_ = json.Unmarshal(apiCall(t, "POST", base, map[string]any{"match": map[string]any{"site": "example.com", "page": "/page/1"},
		"duration": "1h", "author": "ann", "comment": "known launch"}, 201), &byPage)
	_ = json.Unmarshal(apiCall(t, "POST", base, map[string]any{"match": map[string]any{"rule": "rule", "labels": map[string]string{"team": "web"}},
		"duration": "1h", "author": "bob"}, 201), &byLabel)
	// One that has not started yet silences nothing.
	apiCall(t, "POST", base, map[string]any{"match": map[string]any{"site": "example.com"}, "author": "cy",
		"starts_at": time.Now().Add(time.Hour), "duration": "1h"}, 201)

	// Nine crossings over pages 0, 1, 2; those of page 1, and page 0's
	// labelled team=web, are silenced.
	silenced := map[string]bool{}
	for i := 0; i < 9; i++ {
		x := job(i)
		if i == 3 {
			x.Labels = map[string]string{"team": "web"}
		}
		if i == 6 {
			x.Labels = map[string]string{"team": "ops"}
		}
		if x.Path == "/page/1" || i == 3 {
			silenced[x.Key] = true
		}
		b.publish(t, x, x.Key)
	}
	b.runWorker(t, b.cfg, []notify.ReceiverSpec{b.emailSpec()}, nil)
	msgs := b.smtp.WaitForMessages(t, 9-len(silenced), 20*time.Second)
	testcheck.Eventually(t, 10*time.Second, "the silenced outcomes", func() error {
		got := b.chSrv.Query(t, "SELECT crossing_key FROM pagewatch.notifications WHERE outcome = 'silenced' ORDER BY crossing_key")
		if n := strings.Count(got, "\n"); n != len(silenced) {
			return fmt.Errorf("%d recorded: %q", n, got)
		}
		for k := range silenced {
			if !strings.Contains(got, k+"\n") {
				return fmt.Errorf("%s not recorded as silenced: %q", k, got)
			}
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	if n := len(b.smtp.Messages()); n != 9-len(silenced) {
		t.Fatalf("%d mails, want %d", n, 9-len(silenced))
	}
	for _, m := range msgs {
		for k := range silenced {
			if strings.Contains(string(m.Data), k+".") {
				t.Errorf("silenced crossing %s was mailed", k)
			}
		}
	}

	// Expired, the page's silence lets its next crossing through; it stays listed with ?all=1.
	apiCall(t, "POST", base+"/"+byPage.ID+"/expire", nil, 200)
	apiCall(t, "POST", base+"/nosuchsilence/expire", nil, 404)
	var active, all []silence.Silence
	_ = json.Unmarshal(apiCall(t, "GET", base, nil, 200), &active)
	_ = json.Unmarshal(apiCall(t, "GET", base+"?all=1", nil, 200), &all)
	if len(active) != 2 || len(all) != 3 {
		t.Errorf("%d listed, %d with ended ones; want 2 and 3", len(active), len(all))
	}
	x := job(10) // page 1
	testcheck.Eventually(t, 5*time.Second, "the worker to see the expiry", func() error {
		if _, ok := store.Match(x, time.Now()); ok {
			return fmt.Errorf("still silenced in the API's store")
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond) // the worker's own watch
	b.publish(t, x, x.Key)
	b.smtp.WaitForMessages(t, 9-len(silenced)+1, 10*time.Second)
}
