// Package democlock is the clock `make demo` runs the sweeper and the
// console on: from a given moment on it runs faster than the wall clock,
// so the demo shows in a minute what the shipped rule takes hours to say
// (a surge that fires, escalates and is "back to normal" after an hour's
// settle; a page quiet for the 2 hours a drop must last).
//
// It is off unless PAGEWATCH_DEMO_CLOCK is set. Production never sets it;
// the daemons log a warning when it is.
package democlock

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Env is the variable the daemons read: "<start>@<speed>x", start in
// RFC 3339 (2026-05-04T14:00:00.5Z) or Unix seconds with a fraction, speed
// a number like 120. Before start the clock is the wall clock; from start
// on, each wall second is speed seconds.
const Env = "PAGEWATCH_DEMO_CLOCK"

// Clock is a demo clock. The zero Clock is the wall clock.
type Clock struct {
	Start time.Time
	Speed float64 // 0 or 1: the wall clock
}

// Parse reads a spec as Env holds it.
func Parse(spec string) (Clock, error) {
	at, sp, ok := strings.Cut(strings.TrimSpace(spec), "@")
	if !ok || !strings.HasSuffix(sp, "x") {
		return Clock{}, fmt.Errorf("%s: want <start>@<speed>x (like 2026-05-04T14:00:00Z@120x), got %q", Env, spec)
	}
	speed, err := strconv.ParseFloat(strings.TrimSuffix(sp, "x"), 64)
	if err != nil || !(speed >= 1) || speed > 10000 {
		return Clock{}, fmt.Errorf("%s: speed must be 1 to 10000, got %q", Env, sp)
	}
	start, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		secs, ferr := strconv.ParseFloat(at, 64)
		if ferr != nil {
			return Clock{}, fmt.Errorf("%s: start must be RFC 3339 or Unix seconds, got %q", Env, at)
		}
		start = time.Unix(0, int64(secs*1e9))
	}
	return Clock{Start: start, Speed: speed}, nil
}

// FromEnv is the clock Env sets; ok is false when it is not set.
func FromEnv() (c Clock, ok bool, err error) {
	spec := os.Getenv(Env)
	if spec == "" {
		return Clock{}, false, nil
	}
	c, err = Parse(spec)
	return c, err == nil, err
}

// At is the clock's time at wall time t.
func (c Clock) At(t time.Time) time.Time {
	if c.Speed <= 1 || t.Before(c.Start) {
		return t
	}
	return c.Start.Add(time.Duration(float64(t.Sub(c.Start)) * c.Speed))
}

// Now is the clock's time now.
func (c Clock) Now() time.Time { return c.At(time.Now()) }

// Wall is the wall time at which the clock reads t (the inverse of At):
// what a writer sleeps until to stamp a line t.
func (c Clock) Wall(t time.Time) time.Time {
	if c.Speed <= 1 || t.Before(c.Start) {
		return t
	}
	return c.Start.Add(time.Duration(float64(t.Sub(c.Start)) / c.Speed))
}

// String is the spec Parse reads.
func (c Clock) String() string {
	return c.Start.UTC().Format(time.RFC3339Nano) + "@" + strconv.FormatFloat(c.Speed, 'f', -1, 64) + "x"
}
