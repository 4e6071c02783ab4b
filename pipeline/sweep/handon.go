package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// writers bounds the KV writes in flight: a storm of ten thousand
// crossings is ten thousand claims, and one at a time they take seconds.
const writers = 32

// handOn takes a sweep's verdicts to the workers, in the steps that keep
// each crossing to one job whoever sweeps or dies: claim the states,
// apply the storm guard, publish the jobs and record the history, then
// release the claims.
type handOn struct {
	state   *stateStore
	bus     *bus.Bus // the jobs stream
	history Recorder
	metrics *metrics
	logger  *slog.Logger
}

func newHandOn(state *stateStore, b *bus.Bus, history Recorder, m *metrics, logger *slog.Logger) *handOn {
	return &handOn{state: state, bus: b, history: history, metrics: m, logger: logger}
}

// claim writes each changed state, with the crossings that fired recorded
// as pending, conditional on the revision read. A verdict whose write
// loses (another sweeper moved the state) is dropped: the winner has its
// crossings. It returns the verdicts that were written.
func (h *handOn) claim(ctx context.Context, vs []*verdict) []*verdict {
	won := make([]bool, len(vs))
	errs := parallel(len(vs), func(i int) error {
		v := vs[i]
		st := v.stored(append(slices.Clone(v.pending), v.fired...))
		if !v.changed() {
			won[i] = true // only pending to hand on; nothing to claim
			return nil
		}
		rev, err := h.state.put(ctx, v.key, st, v.rev)
		if err != nil {
			return err
		}
		v.rev, won[i] = rev, true
		return nil
	})
	var out []*verdict
	for i, v := range vs {
		if won[i] {
			out = append(out, v)
		}
	}
	if len(errs) > 0 {
		h.metrics.claimConflicts.Add(float64(len(errs)))
		h.logger.Warn("some states were moved by another sweeper; their crossings are theirs", "conflicts", len(errs), "first", errs[0])
	}
	return out
}

// job is one notification to publish: a crossing, or a digest of many.
type job struct {
	x      crossing.Crossing
	folded []crossing.Crossing // for a digest, the crossings it stands for
}

// guard applies each rule's storm guard to the crossings that fired in
// this sweep: the highest counts are mailed one by one, the rest become
// one digest per rule. Crossings left pending by an earlier sweep, and a
// site's "no data" messages, are handed on one by one.
func (h *handOn) guard(vs []*verdict) (jobs []job, all []crossing.Crossing) {
	byRule := map[*rules.Rule][]crossing.Crossing{}
	var order []*rules.Rule
	for _, v := range vs {
		for _, x := range v.pending {
			jobs = append(jobs, job{x: x})
			all = append(all, x)
		}
		if len(v.fired) > 0 && strings.HasPrefix(v.key, noDataPrefix) {
			// A site's "no data" is one message per site, never folded
			// into a digest of pages.
			for _, x := range v.fired {
				jobs = append(jobs, job{x: x})
				all = append(all, x)
			}
			continue
		}
		if len(v.fired) > 0 {
			if _, ok := byRule[v.rule]; !ok {
				order = append(order, v.rule)
			}
			byRule[v.rule] = append(byRule[v.rule], v.fired...)
		}
	}
	for _, r := range order {
		xs := byRule[r]
		slices.SortStableFunc(xs, func(a, b crossing.Crossing) int { return cmpCount(a.Count, b.Count) })
		one, folded := rules.SplitStorm(r.StormGuard, xs)
		for _, x := range one {
			jobs = append(jobs, job{x: x})
		}
		if len(folded) > 0 {
			jobs = append(jobs, job{x: digestOf(r, folded), folded: folded})
			h.metrics.folded.WithLabelValues(r.Name).Add(float64(len(folded)))
			h.logger.Warn("storm guard: crossings folded into one digest", "rule", r.Name, "mailed_one_by_one", len(one), "folded", len(folded))
		}
		all = append(all, xs...)
	}
	return jobs, all
}

// digestOf is the summary job for folded crossings. Its key is derived
// from theirs, so the same set folded again (a sweeper that died before
// clearing its claims) is the same job, deduplicated like any other.
func digestOf(r *rules.Rule, folded []crossing.Crossing) crossing.Crossing {
	keys := make([]string, len(folded))
	for i, x := range folded {
		keys[i] = x.Key
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	first := folded[0]
	d := &crossing.Digest{Total: len(folded)}
	for _, x := range folded[:min(len(folded), crossing.MaxDigestItems)] {
		d.Items = append(d.Items, crossing.Item{Key: x.Key, Path: x.Path, Threshold: x.Threshold, Count: x.Count})
	}
	return crossing.Crossing{
		Key:  r.Name + ".digest." + hex.EncodeToString(h.Sum(nil)[:12]),
		Rule: r.Name, Site: first.Site, Path: matchText(r), Window: first.Window,
		Threshold: first.Threshold, Count: uint64(len(folded)), CrossedAt: first.CrossedAt,
		Recipients: first.Recipients, Receivers: first.Receivers, Labels: first.Labels, WindowFrom: first.WindowFrom, WindowTo: first.WindowTo,
		Digest: d,
	}
}

// publish publishes the jobs and records every crossing in ClickHouse.
// Both are idempotent (the job's key is its Nats-Msg-Id and the workers
// keep a sent ledger; the history is keyed by crossing), so a repeat
// after a crash changes nothing.
func (h *handOn) publish(ctx context.Context, jobs []job, all []crossing.Crossing) error {
	errs := parallel(len(jobs), func(i int) error { return h.publishJob(ctx, jobs[i].x) })
	if len(errs) > 0 {
		return fmt.Errorf("publish %d of %d job(s): %w", len(errs), len(jobs), errors.Join(errs...))
	}
	if len(all) > 0 {
		if err := h.history.RecordCrossings(ctx, all); err != nil {
			return err
		}
	}
	return nil
}

// publishJob publishes one job, keyed by its crossing for the stream's
// deduplication.
func (h *handOn) publishJob(ctx context.Context, x crossing.Crossing) error {
	body, err := x.Marshal()
	if err != nil {
		return err
	}
	msg := nats.NewMsg(h.bus.JobsSubject(bus.Key(x.Site, x.Path)))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, x.Key)
	ctx, cancel := h.state.natsOp(ctx)
	defer cancel()
	if _, err := h.bus.JS.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish job %s: %w", x.Key, err)
	}
	return nil
}

// release clears the pending crossings of the handed-on states.
func (h *handOn) release(ctx context.Context, vs []*verdict) error {
	errs := parallel(len(vs), func(i int) error {
		v := vs[i]
		_, err := h.state.put(ctx, v.key, v.stored(nil), v.rev)
		return err
	})
	if len(errs) > 0 {
		return fmt.Errorf("clear %d claim(s) (they are handed on again next sweep, and deduplicated): %w", len(errs), errs[0])
	}
	return nil
}

// parallel runs f(0..n-1) on up to writers goroutines and collects errors.
func parallel(n int, f func(i int) error) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		next = make(chan int)
	)
	for w := 0; w < min(writers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errs
}
