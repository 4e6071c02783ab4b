package syntheval

import (
	"context"
	"testing"

	"github.com/pagewatch/pagewatch/internal/nabeval"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// The shipped file on the generated pages scores what
// docs/unusual-rules.md says: a change to the rules or the detector that
// moves it must update the page.
func TestShippedDefaultScoresAsDocumented(t *testing.T) {
	const wantCaught, wantEvents, wantFalse = 524, 600, 34
	rs, err := sweep.LoadRules(sweep.Config{RulesPath: "../../deploy/rules/spike-default.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	results, err := Score(context.Background(), Pages(), rs, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	var scores []nabeval.Score
	fa := 0
	for _, r := range results {
		scores = append(scores, r.Score)
		fa += r.Score.FalseAlarms
	}
	if c, n, pw := nabeval.Total(scores); c != wantCaught || n != wantEvents || fa != wantFalse {
		t.Errorf("caught %d/%d, %d false alarms (%.2f per series-week); docs/unusual-rules.md says %d/%d and %d", c, n, fa, pw, wantCaught, wantEvents, wantFalse)
	}
}
