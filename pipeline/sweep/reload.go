package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// Reloader reads the rules again (the config file and the rules path) and
// lists the files they came from, which are watched for changes.
type Reloader interface {
	Load() ([]rules.Rule, error)
	Files() []string
}

// liveRules is the rule set in force. It is swapped whole on a reload, so
// a sweep keeps the set it started with however the files change under it.
type liveRules struct {
	reloader Reloader      // nil: the rules given at start stay
	requests chan struct{} // trigger's, for watch
	metrics  *metrics
	logger   *slog.Logger

	mu  sync.Mutex
	set *ruleSet
}

func newLiveRules(rs []rules.Rule, reloader Reloader, m *metrics, logger *slog.Logger) *liveRules {
	l := &liveRules{reloader: reloader, requests: make(chan struct{}, 1), metrics: m, logger: logger}
	l.replace(rs)
	return l
}

func (l *liveRules) replace(rs []rules.Rule) {
	set := newRuleSet(rs)
	l.mu.Lock()
	l.set = set
	l.mu.Unlock()
	l.metrics.rules.Set(float64(len(rs)))
	for _, r := range rs {
		l.metrics.crossings.WithLabelValues(r.Name)
	}
}

func (l *liveRules) current() *ruleSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.set
}

// reload reads the rules again. An invalid set is rejected whole and the
// rules in force stay: a typo must not silence every alert.
func (l *liveRules) reload() error {
	if l.reloader == nil {
		return errors.New("rules were given at start and cannot be reloaded")
	}
	rs, err := l.reloader.Load()
	if err != nil {
		l.metrics.reloads.WithLabelValues("rejected").Inc()
		l.logger.Error("rules rejected; the previous rules stay in force", "err", err)
		return err
	}
	l.replace(rs)
	l.metrics.reloads.WithLabelValues("ok").Inc()
	l.logger.Info("rules reloaded", "rules", len(rs))
	return nil
}

// trigger asks watch to reload, without waiting: a signal handler must
// not block on a reload in progress.
func (l *liveRules) trigger() {
	select {
	case l.requests <- struct{}{}:
	default: // a reload is already due
	}
}

// watch reloads on trigger and when a rules file changes, until ctx is
// done.
func (l *liveRules) watch(ctx context.Context) {
	var files []string
	if l.reloader != nil {
		files = l.reloader.Files()
	}
	seen := stamps(files)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.requests:
			if l.reload() == nil && l.reloader != nil {
				seen = stamps(l.reloader.Files())
			}
		case <-tick.C:
			if l.reloader == nil {
				continue
			}
			now := stamps(l.reloader.Files())
			if !maps.Equal(seen, now) {
				l.logger.Info("a rules file changed; reloading")
				_ = l.reload() // on error the old rules stay; the log says why
				seen = now
			}
		}
	}
}

// stamps identifies each file's content cheaply: size and modification
// time, or -1 for a file that is gone.
func stamps(files []string) map[string]string {
	out := make(map[string]string, len(files))
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			out[f] = "-1"
			continue
		}
		out[f] = fmt.Sprintf("%d/%d", st.Size(), st.ModTime().UnixNano())
	}
	return out
}
