package console

import (
	"net/http"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
)

// TestPipelinePageInBrowser: the pipeline page in a real browser, over
// real NATS state (pipelineState): the tailed file by its path with its
// bytes behind, the silent tailer's row flagged, the answers coloured.
func TestPipelinePageInBrowser(t *testing.T) {
	b, path, behind := pipelineState(t)
	bd := setup(t, nil, func(d *Deps) { d.Pipeline = NewNATS(b); d.Now = time.Now })
	br := browsertest.Start(t)
	p := br.NewPage(t)
	p.Goto(bd.srv.URL + "/login")
	p.Fill("form#login input[name=user]", "alice")
	p.Fill("form#login input[name=password]", "pw-alice")
	p.ClickNav("form#login button[type=submit]")
	want := bytesShown(int64(behind))
	// The rows by path: the live file's level turns amber once its
	// incomplete line has waited 10 s, which a slow browser start can see.
	behindOf := func() map[string]string {
		paths, behinds := p.Texts(`[data-testid=tailed] td.path`), p.Texts(`[data-testid=tailed] [data-testid=behind]`)
		m := map[string]string{}
		for i := range min(len(paths), len(behinds)) {
			m[paths[i]] = behinds[i]
		}
		return m
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st := p.Goto(bd.srv.URL + "/pipeline"); st != http.StatusOK {
			t.Fatalf("GET /pipeline: %d", st)
		}
		if behindOf()[path] == want || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := behindOf(); got[path] != want {
		t.Errorf("tailed files and bytes behind %q, want %q behind %q", got, path, want)
	}
	if got := p.Text(`[data-testid=tailed][data-level=bad] td.path`); got != "/var/log/nginx/access.log" {
		t.Errorf("flagged file %q, want the silent tailer's", got)
	}
	if n := p.Count(`[data-testid=answer][data-level=bad]`); n < 2 {
		t.Errorf("%d answers flagged bad, want the silent tailer and the failed sweep at least", n)
	}
	p.Screenshot("pipeline")
}
