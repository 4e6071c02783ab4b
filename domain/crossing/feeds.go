package crossing

import (
	"strconv"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Feeds is what the tailers said of a site's logs when its data stopped
// (a "no data" message): whether the pipeline lost the site's hits, or
// the site sent none. Everything in it is the operator's own (tailer
// instances, hosts, file paths), but it is cleaned where shown as any
// text is.
type Feeds struct {
	// Logs are the inputs of the tailers heard from that can carry the
	// site's hits: those named for it, and those that take each line's
	// virtual host for its site. AtEnd are those of them published to
	// JetStream up to their end.
	Logs  int `json:"logs"`
	AtEnd int `json:"at_end"`
	// Named are the Logs named for the site (the rest take sites from
	// virtual hosts).
	Named int `json:"named,omitempty"`
	// Silent are the tailers with such inputs not heard from for three
	// heartbeats, or stopped ("web-1 on host-a, last heard 03:02 UTC");
	// Behind the inputs not published to their end ("web-1:
	// /var/log/nginx/access.log, 230 MB behind since 03:02 UTC"). At
	// most MaxFeeds each; SilentMore and BehindMore count the rest.
	Silent     []string `json:"silent,omitempty"`
	SilentMore int      `json:"silent_more,omitempty"`
	Behind     []string `json:"behind,omitempty"`
	BehindMore int      `json:"behind_more,omitempty"`
	// Unloaded is how many hits of every site were published but not
	// yet acknowledged by the hits stream's durable consumers (the
	// loaders').
	Unloaded uint64 `json:"unloaded,omitempty"`
	// BacklogUnread is set when the consumers could not be listed: how
	// many hits are unloaded is not known, and nothing is said loaded.
	BacklogUnread bool `json:"backlog_unread,omitempty"`
	// At is when the tailers' records were read.
	At time.Time `json:"at,omitzero"`
}

// MaxFeeds bounds the tailers and inputs a Feeds names.
const MaxFeeds = 5

// Text says it in a sentence, for a "no data" message's "Logs" line:
// what is missing upstream ("not yet published: web-1: /var/log/…,
// 3.0 MiB behind since 03:50 UTC"), or, when nothing is, what the
// tailers heard from say of the site's logs. A tailer's record lasts 30
// seconds past its last heartbeat, so one gone longer is in none of it:
// the sentence says what was heard, and claims the site wrote nothing
// only of logs named for it.
func (f *Feeds) Text() string {
	if f == nil {
		return ""
	}
	var parts []string
	if len(f.Silent) > 0 {
		parts = append(parts, "not heard from: "+listMore(f.Silent, f.SilentMore))
	}
	if len(f.Behind) > 0 {
		parts = append(parts, "not yet published: "+listMore(f.Behind, f.BehindMore))
	}
	if f.Unloaded > 0 {
		parts = append(parts, "the loaders have "+traffic.FormatCount(f.Unloaded)+" hits of all sites not yet stored")
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, "; ")
	case f.Logs == 0:
		return "no tailer heard from in the last 30 s reads a log of this site: one stopped or lost longer ago, or none names it or takes sites from virtual hosts"
	case f.BacklogUnread:
		return "the tailers heard from have published their " + logsText(f.Logs) + " that can carry its hits to the end; whether the loaders stored them is not known (their backlog could not be read)"
	case f.Named == 0:
		take := " that take"
		if f.Logs == 1 {
			take = " that takes"
		}
		return "the " + logsText(f.Logs) + take + " sites from virtual hosts, of the tailers heard from, " + isAre(f.Logs) + " published to the end and loaded, with no line for it; a tailer of its own stopped or lost over 30 s ago is not listed"
	}
	return "its " + logsText(f.Named) + " named for it, of the tailers heard from, " + isAre(f.Named) + " published to the end and loaded: its web servers wrote no lines for it"
}

func logsText(n int) string {
	if n == 1 {
		return "log"
	}
	return strconv.Itoa(n) + " logs"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func listMore(xs []string, more int) string {
	s := strings.Join(xs, ", ")
	if more > 0 {
		s += " and " + strconv.Itoa(more) + " more"
	}
	return s
}
