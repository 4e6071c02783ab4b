package syntheval

import (
	"context"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/nabeval"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// The shipped file on the generated pages scores what
// docs/unusual-rules.md says: a change to the rules or the detector that
// moves it must update the page.
func TestShippedDefaultScoresAsDocumented(t *testing.T) {
	const wantCaught, wantEvents, wantFalse = 712, 780, 31
	const wantNABFalse = 91 // with NAB's probation, as real series are scored
	const maxEpisode = 10 * 24 * time.Hour
	rs, err := sweep.LoadRules(sweep.Config{RulesPath: "../../deploy/rules/spike-default.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	results, err := Score(context.Background(), Pages(), rs, testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	var scores []nabeval.Score
	fa, nabFA := 0, 0
	for _, r := range results {
		scores = append(scores, r.Score)
		fa += r.Score.FalseAlarms
		nabFA += r.NAB.FalseAlarms
	}
	// Episodes end: before a hold's bound was kept (rules.Episode.Past),
	// two surges on pages of 30 views stayed open from their fire to
	// the pages' end, 18.5 days, and one on a page whose hours vary by
	// 30 % was resolved after 17.7 days.
	for _, r := range results {
		if r.Longest > maxEpisode {
			t.Errorf("%s: an episode lasted %.1f days, more than %.0f", r.Page.Name, r.Longest.Hours()/24, maxEpisode.Hours()/24)
		}
	}
	if c, n, pw := nabeval.Total(scores); c != wantCaught || n != wantEvents || fa != wantFalse {
		t.Errorf("caught %d/%d, %d false alarms (%.2f per series-week); docs/unusual-rules.md says %d/%d and %d", c, n, fa, pw, wantCaught, wantEvents, wantFalse)
	}
	if nabFA != wantNABFalse {
		t.Errorf("with NAB's probation, %d false alarms; docs/unusual-rules.md says %d", nabFA, wantNABFalse)
	}
}
