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
	// Silent are the tailers with such inputs not heard from for three
	// heartbeats, or stopped ("web-1 on host-a, last heard 03:02 UTC");
	// Behind the inputs not published to their end ("web-1:
	// /var/log/nginx/access.log, 230 MB behind since 03:02 UTC"). At
	// most MaxFeeds each; SilentMore and BehindMore count the rest.
	Silent     []string `json:"silent,omitempty"`
	SilentMore int      `json:"silent_more,omitempty"`
	Behind     []string `json:"behind,omitempty"`
	BehindMore int      `json:"behind_more,omitempty"`
	// Unloaded is how many hits were published but not yet stored in
	// ClickHouse by the loaders, of every site.
	Unloaded uint64 `json:"unloaded,omitempty"`
	// At is when the tailers' records were read.
	At time.Time `json:"at,omitzero"`
}

// MaxFeeds bounds the tailers and inputs a Feeds names.
const MaxFeeds = 5

// Text says it in a sentence, for a "no data" message's "Logs" line:
// "tailer web-1 on host-a not heard from since 03:02 UTC", or, when
// nothing upstream is missing, "its 2 logs are published to their end
// and loaded: its web servers wrote no lines for it".
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
		return "no tailer heard from reads a log of this site (none running, or none names it or takes sites from virtual hosts)"
	}
	logs := "its log is"
	if f.Logs > 1 {
		logs = "its " + strconv.Itoa(f.Logs) + " logs are"
	}
	return logs + " published to the end and loaded: its web servers wrote no lines for it"
}

func listMore(xs []string, more int) string {
	s := strings.Join(xs, ", ")
	if more > 0 {
		s += " and " + strconv.Itoa(more) + " more"
	}
	return s
}
