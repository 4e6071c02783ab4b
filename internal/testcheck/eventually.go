package testcheck

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// Condition is what Eventually waits on: a func() bool that reports
// whether it holds, or a func() error that returns nil once it holds and
// otherwise says what it saw, which a failure reports.
type Condition interface {
	func() bool | func() error
}

// Eventually calls cond until it holds, and fails the test (tb.Fatal)
// once within has passed without it holding. The failure reads
// "after <within>, still waiting for <what>", followed, for a func() error,
// by the last error: so what names what is awaited ("the second mail",
// "page_minutes to hold 2000 hits"), and the error says what was there
// instead ("1 mail, to bob@").
//
// cond runs in the caller's goroutine, first at once, then after pauses
// that double from 1ms up to a two-hundredth of within (never more than
// 50ms), and a last time at the deadline; it may call tb.Fatal itself.
// Eventually must be called from the test's goroutine, as tb.Fatal must.
func Eventually[C Condition](tb testing.TB, within time.Duration, what string, cond C) {
	tb.Helper()
	var check func() error
	switch c := any(cond).(type) {
	case func() bool:
		check = func() error {
			if c() {
				return nil
			}
			return errNotYet
		}
	case func() error:
		check = c
	}
	if err := wait(within, check); err != nil {
		if within > time.Millisecond {
			within = within.Round(time.Millisecond)
		}
		if errors.Is(err, errNotYet) {
			tb.Fatalf("after %v, still waiting for %s", within, what)
		}
		tb.Fatalf("after %v, still waiting for %s: %v", within, what, err)
	}
}

// Poll calls cond as Eventually does until it holds or within has passed,
// and reports whether it held. It is for a caller that carries on either
// way; a test that needs cond uses Eventually.
func Poll(within time.Duration, cond func() bool) bool {
	return wait(within, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}) == nil
}

var errNotYet = fmt.Errorf("not yet")

const (
	firstPause = time.Millisecond
	maxPause   = 50 * time.Millisecond
)

// wait returns nil once check does, or check's last error once within
// has passed; check runs at least once, and once more at the deadline.
// A short wait checks often: a 2 s one every 10ms at most, one of 10 s
// or more every 50ms.
func wait(within time.Duration, check func() error) error {
	deadline := time.Now().Add(within)
	longest := min(max(within/200, firstPause), maxPause)
	pause := firstPause
	for {
		err := check()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, longest)
	}
}
