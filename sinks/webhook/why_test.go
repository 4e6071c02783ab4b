package webhook_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/webhook"
)

// The crossing's why rides in the v1 payload as an optional object, the
// referrer domains as JSON strings (escaped by encoding/json, never
// interpreted); a crossing without one has no "why" key.
func TestPayloadCarriesWhy(t *testing.T) {
	n := notify.Notification{Key: "k", Rule: "r", Site: "s", Path: "/p", Count: 400,
		Why: &crossing.Why{Kind: "spike", Count: 400, Baseline: 20, Factor: 4, Ratio: 20, Rank: 2, RankOf: 9,
			Referrers: []crossing.ReferrerShare{{Domain: "<script>x</script>", Hits: 3, Share: 0.5}}}}
	body, err := json.Marshal(webhook.NewPayload("hooks", n))
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Crossing struct {
			Why *crossing.Why `json:"why"`
		} `json:"crossing"`
	}
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	w := back.Crossing.Why
	if w == nil || w.Rank != 2 || w.Baseline != 20 || len(w.Referrers) != 1 || w.Referrers[0].Domain != "<script>x</script>" {
		t.Errorf("why in the payload: %s", body)
	}
	if strings.Contains(string(body), "<script>") {
		t.Errorf("payload carries raw markup: %s", body)
	}
	n.Why = nil
	if body, _ := json.Marshal(webhook.NewPayload("hooks", n)); strings.Contains(string(body), `"why"`) {
		t.Errorf("payload without a why has the key: %s", body)
	}
}
