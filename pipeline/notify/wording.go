package notify

import (
	"strconv"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"strings"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// mostlyFrom is the share of the window's referred views above which one
// referrer domain is named in the headline: "mostly from".
const mostlyFrom = 0.5

// Predicate is what a notification says of its page, after the page's
// name: the default subject is the path and this ("/launch is at 6.2×
// its normal: 280 views in 1h, mostly from news.example"), the default
// first sentence the path, the site and this. It follows the rule's kind
// and the message's event: a threshold passed, a spike, a page gone
// quiet, a new page, an escalation, back to normal. clean bounds and
// cleans the one piece of stranger-written text in it (a referrer
// domain), as the sink cleans the path.
func (n Notification) Predicate(clean func(string) string) string {
	in := ""
	if w := strings.TrimSpace(n.Window); w != "" && !strings.EqualFold(w, "all time") {
		in = " in " + w
	}
	count := traffic.FormatViews
	views := func(c uint64) string { return count(c) + in }
	w := n.Why
	down := w != nil && w.Direction == "down"
	// Rules with a normal (spike, unusual) and new pages speak of their
	// page against its past; threshold rules of their threshold.
	normal := w.AgainstNormal()
	spiky := normal || w.NewPage()
	if w.SiteWide() {
		since := w.Since.UTC().Format("15:04 UTC, 2 Jan")
		if n.Event == string(rules.EventResolve) {
			return "sends data again (none had come since " + since + "): drops on its pages are judged again"
		}
		return "sent no data since " + since + ": drops on its pages are held until it does"
	}
	switch n.Event {
	case string(rules.EventResolve):
		if w != nil && w.LevelEnded {
			return "is back to its old level: " + views(n.Count) + " (it had stayed " + w.LevelStayed() + " at " + w.RaisedText() + " its normal since " + w.RaisedSince.UTC().Format("2 Jan") + ")"
		}
		if w != nil && w.NewNormal && w.Raised > 0 {
			// Held as high two days running (as low 10 days): a new
			// level, which it is judged at from now (rules'
			// unusual_level.go).
			told := w.Since.UTC().Format("15:04 UTC, 2 Jan")
			if down {
				return "has stayed down: " + views(n.Count) + ", " + w.RaisedText() + " its normal for 10 days: judged at that level from now (told gone quiet at " + told + ")"
			}
			return "has stayed up: " + views(n.Count) + ", " + w.RaisedText() + " its normal for 2 days: judged at that level from now (told taking off at " + told + ")"
		}
		if w != nil && w.NewNormal {
			// Its normal followed it: no "back to normal" for a page
			// renamed, deleted or gone from search, nor for one that
			// rose for good. Since is when it was told (down_for or a
			// window after it began), so the message says "told".
			told := w.Since.UTC().Format("15:04 UTC, 2 Jan")
			if down {
				return "has not come back: " + views(n.Count) + ", and its normal has followed it (told gone quiet at " + told + ")"
			}
			return "has stayed up: " + views(n.Count) + ", and its normal has followed it (told taking off at " + told + ")"
		}
		s := "is back to normal"
		switch {
		case !spiky:
			s = "is back below " + views(n.Threshold)
		case normal && !down && w.High > 0 && float64(n.Count) < w.Low:
			// Its surge over, the page under its range (a site swamped,
			// then down): not "normal"; a drop is told if it lasts.
			s = "is no longer up but under its usual range: " + views(n.Count) + rangeOf(w) + ","
		case normal && down && w.High > 0 && float64(n.Count) > w.High:
			// Back, and past its range (the catch-up after an outage):
			// a surge is told if it is one.
			s = "is back, over its usual range: " + views(n.Count) + rangeOf(w) + ","
		}
		if w != nil && w.Peak > 0 {
			// A threshold's window is said once, in "below".
			peak := views(w.Peak)
			if !spiky {
				peak = traffic.FormatCount(w.Peak)
			}
			if down {
				s += " after falling to " + peak
			} else {
				s += " after peaking at " + peak
			}
			if w.Total > 0 {
				s += " (" + count(w.Total) + " in all)"
			}
		}
		return s
	case string(rules.EventEscalate):
		level := "the level it fired at"
		if !spiky {
			level = "its threshold"
		}
		switch {
		case w != nil && w.Step > 0 && down:
			return "fell to 1/" + trimFloat(w.Step) + " of " + level + ": " + views(n.Count)
		case w != nil && w.Step > 0 && w.BurstText() != "":
			// Escalated on its minutes: say those, as a fire on them does.
			return "rose to " + trimFloat(w.Step) + "× " + level + ": " + w.BurstText() + " (" + views(n.Count) + ")" + mostlyClients(w)
		case w != nil && w.Step > 0:
			return "rose to " + trimFloat(w.Step) + "× " + level + ": " + views(n.Count) + mostlyClients(w)
		case down:
			return "fell further: " + views(n.Count)
		}
		return "rose further: " + views(n.Count) + mostlyClients(w)
	}
	switch {
	case normal && w.Direction == "down" && w.BurstText() != "":
		// Heard on its hours together, which its hour alone may not
		// show: say those.
		return "went quiet: " + w.BurstText() + " (" + views(n.Count) + ")"
	case normal && w.Direction == "down":
		s := "went quiet: " + views(n.Count)
		switch {
		case w.High > 0:
			s += rangeOf(w)
		case w.Baseline > 0:
			s += ", against " + approx(w.Baseline) + " normally"
		}
		return s
	case normal && w.BurstText() != "":
		// Fired on its minutes, which the hour may not show: say those.
		s := "took off from nothing: "
		if w.Launch {
			s = "took off as a new page: "
		}
		if r := w.BurstRatio(); r > 0 {
			s = "is at " + strconv.FormatFloat(r, 'f', 1, 64) + "× its normal: "
		}
		return s + w.BurstText() + " (" + views(n.Count) + ")" + n.mostlyFrom(clean) + mostlyClients(w)
	case normal && w.Ratio > 0:
		return "is at " + strconv.FormatFloat(w.Ratio, 'f', 1, 64) + "× its normal: " + views(n.Count) + rangeOf(w) + n.mostlyFrom(clean) + mostlyClients(w)
	case normal && w.Launch:
		return "took off as a new page: " + views(n.Count) + n.mostlyFrom(clean) + mostlyClients(w)
	case normal:
		return "took off from nothing: " + views(n.Count) + n.mostlyFrom(clean) + mostlyClients(w)
	case w.NewPage():
		return "took off as a new page: " + views(n.Count) + n.mostlyFrom(clean) + mostlyClients(w)
	}
	return "passed " + views(n.Threshold) + mostlyClients(w)
}

// mostlyClients is the clear mark of a surge most of which one client,
// or unidentified clients, sent: "; mostly one client". Only a rule
// whose client guard is off, or an escalation of an episode the guard
// let fire, says it: the guard holds the others.
func mostlyClients(w *crossing.Why) string {
	if w == nil {
		return ""
	}
	if m := w.Clients.MostlyText(); m != "" {
		return "; " + m
	}
	return ""
}

// rangeOf is ", expected 120–180" for a rule with a usual range.
func rangeOf(w *crossing.Why) string {
	r := w.RangeText()
	if r != "" {
		r = ", " + r
	}
	if w.Raised > 0 && !w.NewNormal && !w.LevelEnded {
		// Its normal is its new level's: say so, or "its normal" reads
		// as the one it rose from.
		r += " (its normal at the level it " + w.LevelWent() + " to on " + w.RaisedSince.UTC().Format("2 Jan") + ", " + w.RaisedText() + " before)"
	}
	return r
}

// mostlyFrom names the referrer domain that sent most of the window's
// referred views, if one did.
func (n Notification) mostlyFrom(clean func(string) string) string {
	if n.Why == nil || len(n.Why.Referrers) == 0 {
		return ""
	}
	top := n.Why.Referrers[0]
	if top.Share <= mostlyFrom || top.Domain == "" {
		return ""
	}
	return ", mostly from " + clean(top.Domain)
}

// trimFloat writes 4, 2.5 or 0.33: no trailing zeros.
func trimFloat(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// approx writes a baseline (a median, so maybe a fraction) as people
// would say it: 41, 3.5.
func approx(f float64) string {
	if f >= 10 {
		return traffic.FormatCount(uint64(f + 0.5))
	}
	return trimFloat(float64(int(f*10+0.5)) / 10)
}
