package mail

import (
	"context"
	"log/slog"
	"sync"
)

// Settings is the mail config in force, which a reload (SIGHUP) may
// replace: a rotated SMTP password or a new relay takes effect without
// restarting the worker or dropping a job.
type Settings struct {
	mu  sync.Mutex
	cfg Config
	gen uint64
}

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

// Probe checks the config in force; see the package function Probe.
func (s *Settings) Probe(ctx context.Context) error {
	cfg, _ := s.Get()
	return Probe(ctx, cfg)
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
func (f *Following) Send(ctx context.Context, n Notification) error {
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
