package mail

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// Settings is the mail config in force, which a reload (SIGHUP) may
// replace: a rotated SMTP password or a new relay takes effect without
// restarting the worker or dropping a job.
type Settings struct {
	mu  sync.Mutex
	cfg Config
	gen uint64

	probeMu  sync.Mutex
	probed   time.Time // when probeErr was found, for probeGen
	probeGen uint64
	probeErr error
}

// probeEvery spaces the readiness probes: each is a new connection to
// the mail server, and orchestrators and monitors probe every few
// seconds per process, which a relay may take for abuse.
const probeEvery = 5 * time.Second

// NewSettings holds cfg as the config in force.
func NewSettings(cfg Config) *Settings { return &Settings{cfg: cfg} }

// Set replaces the config in force after checking that a Sender can be
// made from it; an invalid one is refused and the old one stays.
func (s *Settings) Set(cfg Config) error {
	probe, err := New(cfg, nil)
	if err != nil {
		return err
	}
	_ = probe.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen > 0 && reflect.DeepEqual(cfg, s.cfg) {
		return nil // unchanged: keep the open connections
	}
	s.cfg = cfg
	s.gen++
	return nil
}

// Get returns the config in force and its generation.
func (s *Settings) Get() (Config, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg, s.gen
}

// Probe checks the config in force (see the package function Probe),
// at most once per probeEvery: in between it repeats the last answer.
func (s *Settings) Probe(ctx context.Context) error {
	cfg, gen := s.Get()
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if gen == s.probeGen && !s.probed.IsZero() && time.Since(s.probed) < probeEvery {
		return s.probeErr
	}
	s.probeErr = Probe(ctx, cfg)
	s.probed, s.probeGen = time.Now(), gen
	return s.probeErr
}

// Following is a Sender that follows Settings: the first Send after the
// config changes closes its Sender (QUIT to the old server) and opens one
// from the new config. Like a Sender it serves one runner; it is not for
// concurrent use.
type Following struct {
	settings *Settings
	logger   *slog.Logger
	sender   *Sender
	gen      uint64
}

// NewFollowing opens a Sender from the config in force.
func NewFollowing(s *Settings, logger *slog.Logger) (*Following, error) {
	cfg, gen := s.Get()
	sender, err := New(cfg, logger)
	if err != nil {
		return nil, err
	}
	return &Following{settings: s, logger: logger, sender: sender, gen: gen}, nil
}

// Send sends n with a Sender made from the config in force.
func (f *Following) Send(ctx context.Context, n notify.Notification) error {
	if cfg, gen := f.settings.Get(); gen != f.gen {
		next, err := New(cfg, f.logger)
		if err != nil {
			return err // Set checked it: not expected
		}
		if err := f.sender.Close(); err != nil && f.logger != nil {
			f.logger.Warn("closing the mail sender of the previous config", "err", err)
		}
		f.sender, f.gen = next, gen
	}
	return f.sender.Send(ctx, n)
}

// Close closes the current Sender.
func (f *Following) Close() error { return f.sender.Close() }
