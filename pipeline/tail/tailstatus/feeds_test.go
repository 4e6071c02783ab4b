package tailstatus_test

import (
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/tail/tailstatus"
)

// What the tailers' records say of one site's logs: its own inputs and
// those taking sites from virtual hosts count, another site's and a
// standby's do not; a tailer not heard from, or stopped, is named; an
// input whose lines have waited over a minute is behind.
func TestFeedsOfASite(t *testing.T) {
	now := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	file := func(name, site string) tailstatus.Input {
		return tailstatus.Input{Kind: tailstatus.KindFile, Name: name, Site: site}
	}
	behind := file("/var/log/a/access.log", "a.example")
	behind.Behind, behind.UnpublishedSince = 3<<20, now.Add(-10*time.Minute)
	busy := file("/var/log/vhosts.log", "")
	busy.Behind, busy.UnpublishedSince = 200, now.Add(-2*time.Second) // a batch filling: at its end
	standby := file("/var/log/a/access.log", "a.example")
	standby.Standby = true
	ts := []tailstatus.Tailer{
		{Instance: "web-1", Host: "h1", At: now.Add(-3 * time.Second), Inputs: []tailstatus.Input{behind, busy, file("/var/log/b.log", "b.example")}},
		{Instance: "web-2", Host: "h2", At: now.Add(-2 * time.Second), Inputs: []tailstatus.Input{standby}},
		{Instance: "web-3", Host: "h3", At: now.Add(-20 * time.Second), Inputs: []tailstatus.Input{file("/var/log/vhosts.log", "")}},
		{Instance: "web-4", Host: "h4", At: now.Add(-5 * time.Second), Stopped: true, Inputs: []tailstatus.Input{file("/var/log/a.log", "A.example")}},
		{Instance: "web-5", Host: "h5", At: now.Add(-time.Hour), Inputs: []tailstatus.Input{file("/var/log/b.log", "b.example")}},
	}

	f := tailstatus.FeedsOf(ts, "a.example", now)
	if f.Logs != 2 || f.AtEnd != 1 {
		t.Errorf("logs %d at end %d, want 2 and 1 (web-1's own and its virtual hosts')", f.Logs, f.AtEnd)
	}
	want := "not heard from: web-3 on h3, last heard 03:59 UTC, web-4 on h4, stopped at 03:59 UTC; " +
		"not yet published: web-1: /var/log/a/access.log, 3,145,728 B (3.0 MiB) behind since 03:50 UTC"
	if got := f.Text(); got != want {
		t.Errorf("text\n%s\nwant\n%s", got, want)
	}

	// A site whose own log is read to its end, and loaded: it wrote
	// nothing. One whose logs only take sites from virtual hosts: they
	// had no line for it, but a tailer of its own gone over 30 s ago
	// would be in no record.
	at := file("/var/log/c.log", "c.example")
	f = tailstatus.FeedsOf([]tailstatus.Tailer{{Instance: "web-9", Host: "h9", At: now, Inputs: []tailstatus.Input{at, busy}}}, "c.example", now)
	if got, want := f.Text(), "its log named for it, of the tailers heard from, is published to the end and loaded: its web servers wrote no lines for it"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	f = tailstatus.FeedsOf(ts[:1], "c.example", now)
	if got, want := f.Text(), "the log that takes sites from virtual hosts, of the tailers heard from, is published to the end and loaded, with no line for it; a tailer of its own stopped or lost over 30 s ago is not listed"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	// ...and not yet loaded.
	f.Unloaded = 12000
	if got, want := f.Text(), "the loaders have 12,000 hits of all sites not yet stored"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	// ...and its backlog unread: nothing is said loaded.
	f.Unloaded, f.BacklogUnread = 0, true
	if got, want := f.Text(), "the tailers heard from have published their log that can carry its hits to the end; whether the loaders stored them is not known (their backlog could not be read)"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	// A site no tailer heard from reads.
	f = tailstatus.FeedsOf(ts[1:2], "c.example", now)
	if got, want := f.Text(), "no tailer heard from in the last 30 s reads a log of this site: one stopped or lost longer ago, or none names it or takes sites from virtual hosts"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}
