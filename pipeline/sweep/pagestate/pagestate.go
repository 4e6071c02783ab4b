// Package pagestate is the format of what the sweeper keeps in NATS KV
// per rule and page, and a reader of it for the console: the sweep
// writes states, and nothing else knows their keys or shape.
package pagestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// State is what the sweeper keeps per rule and page (per rule, for a sum
// rule): the rule's re-arm state, and the crossings it claimed but has
// not yet handed on. A sweeper that dies between claiming and handing on
// leaves them pending, and the next sweep hands them on.
type State struct {
	rules.State
	Pending []crossing.Crossing `json:"pending,omitempty"`
	// Held is set while the client guard keeps the page's surge from
	// firing (rules.ClientGuard); nil: nothing held.
	Held *Held `json:"held,omitempty"`
}

// Held is a surge the client guard did not let fire: the rule would
// have opened an episode, and no crossing, job or episode was made of
// it. The sweep judges it again each sweep while it lasts (it fires
// then if people came) and clears it once the rule no longer would fire.
type Held struct {
	// Since is the first sweep that held this surge, At the last.
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
	// Checked is when its clients were last read; zero: not yet, the
	// sweep had more surges to check than it checks at once
	// (Mostly is then empty and Reason says so).
	Checked time.Time `json:"checked,omitzero"`
	// Mostly is crossing.MostlyOneClient or MostlyUnidentified; Reason
	// the same in words for people: "mostly one client: 97% of 1,204
	// views".
	Mostly string `json:"mostly,omitempty"`
	Reason string `json:"reason"`
}

// ProgressKey holds how far sweeps have evaluated, for catching up.
const ProgressKey = "progress"

// Key names a rule's state for one page, or for the rule when it sums
// its pages (sum). Crossing keys start with it.
func Key(rule, site, path string, sum bool) string {
	if sum {
		return rule + ".sum"
	}
	return RuleKey(rule, PageKey(site, path))
}

// PageKey is the part of a page's state keys that names the page: the
// same under every rule, so a sweep hashes a page once, not once per
// rule watching it.
func PageKey(site, path string) string { return bus.Key(site, path) }

// RuleKey is a rule's state key for the page named by pageKey (PageKey).
func RuleKey(rule, pageKey string) string { return rule + "." + pageKey }

// PageOf is the page part of a state key (PageKey, or "sum"). Rule
// names hold no dot (rules.Validate), so the first dot ends the name.
func PageOf(key string) string {
	_, p, _ := strings.Cut(key, ".")
	return p
}

// legacyState is the shape states had before rules grew milestones and
// calendar windows: one threshold, an armed flag, one pending crossing.
type legacyState struct {
	Armed   *bool           `json:"armed"`
	Pending json.RawMessage `json:"pending"`
}

// Decode reads a state, including one a sweeper of an earlier
// version wrote: a disarmed rule is recorded as every threshold fired
// (LegacyFired, resolved against the rule when it is evaluated), and its
// pending crossing carries over.
func Decode(data []byte) (State, error) {
	var legacy legacyState
	if err := json.Unmarshal(data, &legacy); err != nil {
		return State{}, fmt.Errorf("decode: %w", err)
	}
	if legacy.Armed == nil {
		var st State
		if err := json.Unmarshal(data, &st); err != nil {
			return State{}, fmt.Errorf("decode: %w", err)
		}
		return st, nil
	}
	var st State
	var old struct {
		Episode uint64 `json:"episode"`
	}
	_ = json.Unmarshal(data, &old)
	st.Episode = old.Episode
	if !*legacy.Armed {
		st.Fired = []uint64{LegacyFired}
	}
	if len(legacy.Pending) > 0 && string(legacy.Pending) != "null" {
		var x crossing.Crossing
		if err := json.Unmarshal(legacy.Pending, &x); err != nil {
			return State{}, fmt.Errorf("decode pending crossing: %w", err)
		}
		st.Pending = []crossing.Crossing{x}
	}
	return st, nil
}

// LegacyFired stands for "the rule's one threshold" in a state converted
// from the old shape; FixLegacy swaps in the real threshold.
const LegacyFired = ^uint64(0)

// FixLegacy resolves LegacyFired against the rule.
func FixLegacy(st *rules.State, r *rules.Rule) {
	for i, f := range st.Fired {
		if f == LegacyFired && len(r.Thresholds) > 0 {
			st.Fired[i] = r.Thresholds[0]
		}
	}
}

// Reader reads what the sweeper keeps of each rule and page, for
// readers outside the sweep (the console). It never creates the bucket: until a sweeper has
// run there is no state, and Read says so.
type Reader struct {
	b    *bus.Bus
	open sync.Mutex
	kvv  jetstream.KeyValue // nil until a sweeper made the bucket
}

// NewReader reads through b. It does no I/O.
func NewReader(b *bus.Bus) *Reader { return &Reader{b: b} }

// Summary is the sweeper's state of one rule on one page: the rule's
// re-arm state and open episode, and how many crossings it claimed but
// has not yet handed on.
type Summary struct {
	rules.State
	Pending int
	// Held is the surge the client guard holds, if any: the console
	// shows its Reason ("mostly one client: ...").
	Held *Held
}

// Read returns the state of rule on a page (site and path ignored with
// sum, for a rule that sums its pages); ok is false when the sweeper has
// none. A state of an earlier version reads in the current shape, with
// the fired mark of its one threshold as fired.
func (r *Reader) Read(ctx context.Context, rule, site, path string, sum bool) (st Summary, ok bool, err error) {
	kv, err := r.kv(ctx)
	if err != nil || kv == nil {
		return Summary{}, false, err
	}
	key := Key(rule, site, path, sum)
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Summary{}, false, nil
	}
	if err != nil {
		return Summary{}, false, fmt.Errorf("sweeper state %s: %w", key, err)
	}
	ps, err := Decode(e.Value())
	if err != nil {
		return Summary{}, false, fmt.Errorf("sweeper state %s: %w", key, err)
	}
	return Summary{State: ps.State, Pending: len(ps.Pending), Held: ps.Held}, true, nil
}

// Progress returns how far sweeps have evaluated; ok is false before the
// first sweep.
func (r *Reader) Progress(ctx context.Context) (t time.Time, ok bool, err error) {
	kv, err := r.kv(ctx)
	if err != nil || kv == nil {
		return time.Time{}, false, err
	}
	e, err := kv.Get(ctx, ProgressKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("sweeper progress: %w", err)
	}
	if err := t.UnmarshalText(e.Value()); err != nil {
		return time.Time{}, false, fmt.Errorf("sweeper progress: %w", err)
	}
	return t, true, nil
}

// kv opens the sweeps bucket if a sweeper made it; nil if not yet.
func (r *Reader) kv(ctx context.Context) (jetstream.KeyValue, error) {
	r.open.Lock()
	defer r.open.Unlock()
	if r.kvv != nil {
		return r.kvv, nil
	}
	kv, err := r.b.JS.KeyValue(ctx, r.b.BucketName(bus.BucketSweeps))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bus.BucketSweeps, err)
	}
	r.kvv = kv
	return kv, nil
}
