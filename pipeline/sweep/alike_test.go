package sweep

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

// Rules alike (one per section of a site, say: the same detector and
// window, other names and receivers) weigh a page once, not once per
// rule (weighStateless): in the first sweep, whose normals are not yet
// known, one rule's observation stands for the others; later, the first
// verdict is every rule's. Each rule still says everything it would say
// alone, at the same moment: a surge heard in that first sweep, and a
// drop heard two hours into the sweeps.
func TestRulesAlikeEachSayWhatTheyWouldAlone(t *testing.T) {
	b := setup(t)
	var names []string
	b.cfg.Rules = nil
	for _, name := range []string{"section-a", "section-b", "section-c"} {
		r := unusualBoth()
		r.Name = name
		r.Notify.Recipients = []string{name + "@example.com"}
		b.cfg.Rules = append(b.cfg.Rules, r)
		names = append(names, name)
	}
	now := time.Now().UTC().Truncate(time.Minute)
	first := now.Add(-150 * time.Minute)
	history := now.Add(-8 * 24 * time.Hour)
	b.addSteady(t, "/home", 60, history, now.Add(time.Minute))
	b.addSteady(t, "/checkout", 120, history, now.Add(time.Minute))
	b.addSteady(t, "/checkout", 1200, first.Add(-20*time.Minute), now.Add(time.Minute)) // 11x from 20 minutes before the first sweep
	b.addSteady(t, "/gone", 120, history, now.Add(-5*time.Hour))                        // nothing for 5 hours

	c := &clock{t: first}
	s := b.sweeper(t, c)
	b.sweep(t, s)
	if got := saidBy(b.jobs(t)); fmt.Sprint(got) != "map[section-a:[fire up /checkout] section-b:[fire up /checkout] section-c:[fire up /checkout]]" {
		t.Fatalf("first sweep, normals not yet known: %v, want the surge from each rule", got)
	}
	for at := first.Add(10 * time.Minute); !at.After(now); at = at.Add(10 * time.Minute) {
		c.set(at)
		b.sweep(t, s)
	}
	jobs := b.jobs(t)
	said := saidBy(jobs)
	want := "[fire up /checkout fire down /gone]"
	for _, name := range names {
		if fmt.Sprint(said[name]) != want {
			t.Errorf("%s said %v, want %s", name, said[name], want)
		}
	}
	// Alike in what, when and against what, to the rule's own receivers.
	byRule := map[string][]crossing.Crossing{}
	for _, x := range jobs {
		byRule[x.Rule] = append(byRule[x.Rule], x)
	}
	a := byRule[names[0]]
	for _, name := range names[1:] {
		for i, x := range byRule[name] {
			if i >= len(a) || !x.CrossedAt.Equal(a[i].CrossedAt) || x.Count != a[i].Count || x.Why.Low != a[i].Why.Low || x.Why.High != a[i].Why.High {
				t.Errorf("%s: %s at %s count %d usual %.0f-%.0f, unlike %s's", name, x.Path, x.CrossedAt, x.Count, x.Why.Low, x.Why.High, names[0])
			}
			if fmt.Sprint(x.Recipients) != "["+name+"@example.com]" {
				t.Errorf("%s's crossing goes to %v", name, x.Recipients)
			}
		}
	}
}

// saidBy lists "event direction path" of each rule's crossings, in the
// order they were made.
func saidBy(jobs []crossing.Crossing) map[string][]string {
	slices.SortStableFunc(jobs, func(a, b crossing.Crossing) int { return a.CrossedAt.Compare(b.CrossedAt) })
	out := map[string][]string{}
	for _, x := range jobs {
		out[x.Rule] = append(out[x.Rule], strings.Join([]string{x.Event, x.Why.Direction, x.Path}, " "))
	}
	return out
}
