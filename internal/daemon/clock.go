package daemon

import (
	"time"

	"github.com/pagewatch/pagewatch/internal/democlock"
)

// Clock is what the commands that judge time (the sweeper, the console,
// and ingest tail, which reports lines dated ahead of it) take as now: the wall clock, unless PAGEWATCH_DEMO_CLOCK sets the
// faster one `make demo` runs on (internal/democlock). It is read here
// once so that no part of pagewatch reads the variable on its own, and a
// bad value stops the command rather than running on a clock nobody meant.
func (e *Env[C]) Clock() (func() time.Time, error) {
	c, ok, err := democlock.FromEnv()
	if err != nil || !ok {
		return time.Now, err
	}
	e.Logger.Warn("running on a demo clock: now runs faster than the wall clock; never set this in production",
		"env", democlock.Env, "start", c.Start.UTC(), "speed", c.Speed)
	return c.Now, nil
}
