package tailstatus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// behindAfter is how long an input's oldest unpublished line may wait
// before the input is called behind: a batch waits for its size or its
// age, a few seconds, as a matter of course.
const behindAfter = time.Minute

// Feeds reads what the tailers and the loaders say of sites' hits, for
// the sweeper's "no data" messages (sweep.Feeder).
type Feeds struct{ Bus *bus.Bus }

// Feeds reads the tailers' records and the loaders' backlog once, and
// says of each site which of the logs that can carry its hits are heard
// from and published to their end. The backlog unread (a consumer
// listing that failed) is an error beside the sites' feeds, which are
// still returned.
func (f Feeds) Feeds(ctx context.Context, sites []string, now time.Time) (map[string]*crossing.Feeds, error) {
	ts, err := Read(ctx, f.Bus)
	if err != nil {
		return nil, err
	}
	n, err := unloaded(ctx, f.Bus)
	out := make(map[string]*crossing.Feeds, len(sites))
	for _, site := range sites {
		out[site] = FeedsOf(ts, site, now)
		out[site].Unloaded, out[site].BacklogUnread = n, err != nil
	}
	return out, err
}

// unloaded is the hits stream's messages its durable consumers have not
// acknowledged: delivered or not, not yet stored. The loaders share one
// durable consumer (ingest's load.consumer); an ephemeral one is a
// reader's (a replay, an inspection), whose backlog is no hit unloaded.
func unloaded(ctx context.Context, b *bus.Bus) (uint64, error) {
	st, err := b.JS.Stream(ctx, b.HitsStreamName())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", b.HitsStreamName(), err)
	}
	var n uint64
	lister := st.ListConsumers(ctx)
	for c := range lister.Info() {
		if c.Config.Durable != "" {
			n = max(n, c.NumPending+uint64(c.NumAckPending))
		}
	}
	if err := lister.Err(); err != nil {
		return 0, fmt.Errorf("consumers of %s: %w", b.HitsStreamName(), err)
	}
	return n, nil
}

// FeedsOf is what the records ts say of site's logs at now: every input
// named for the site or taking sites from virtual hosts, not on standby
// (another tailer holds its file), of a tailer heard from; and the
// tailers with such inputs that are not.
func FeedsOf(ts []Tailer, site string, now time.Time) *crossing.Feeds {
	f := &crossing.Feeds{At: now.UTC()}
	for _, t := range ts {
		var mine []Input
		for _, in := range t.Inputs {
			if !in.Standby && (in.Site == "" || strings.EqualFold(in.Site, site)) {
				mine = append(mine, in)
			}
		}
		if len(mine) == 0 {
			continue
		}
		interval := t.Interval
		if interval <= 0 {
			interval = Interval
		}
		who := t.Instance + " on " + t.Host
		switch {
		case t.Stopped:
			add(&f.Silent, &f.SilentMore, who+", stopped at "+clock(t.At))
			continue
		case now.Sub(t.At) > SilentAfter(interval):
			add(&f.Silent, &f.SilentMore, who+", last heard "+clock(t.At))
			continue
		}
		for _, in := range mine {
			f.Logs++
			if in.Site != "" {
				f.Named++
			}
			if in.UnpublishedSince.IsZero() || now.Sub(in.UnpublishedSince) < behindAfter {
				f.AtEnd++
				continue
			}
			add(&f.Behind, &f.BehindMore, t.Instance+": "+in.Name+", "+traffic.FormatBytes(in.Behind)+" behind since "+clock(in.UnpublishedSince))
		}
	}
	return f
}

func add(list *[]string, more *int, s string) {
	if len(*list) < crossing.MaxFeeds {
		*list = append(*list, s)
		return
	}
	*more++
}

func clock(t time.Time) string { return t.UTC().Format("15:04 UTC") }
